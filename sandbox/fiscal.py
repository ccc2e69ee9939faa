"""The fiscal provider's fake: POST /invoices issues an invoice number once per Idempotency-Key, and
POST /credit-notes issues a credit note ("nota de crédito") for an invoice it issued."""

from __future__ import annotations

from sandbox.common import Resource, serve


def invoice(seq: int, _cancelled: dict | None) -> dict:
    """The provider's answer for the seq-th invoice it issues."""
    return {"invoice_number": f"A-0001-{seq:08d}", "status": "EMITIDA"}


def credit_note(seq: int, cancelled: dict | None) -> dict:
    """The provider's answer for the seq-th credit note, naming the invoice it cancels."""
    return {
        "credit_note_number": f"NC-0001-{seq:08d}",
        "invoice_number": (cancelled or {}).get("invoice_number"),
        "status": "EMITIDA",
    }


RESOURCES = [
    Resource("invoices", "invoice", invoice),
    Resource("credit-notes", "credit_note", credit_note, cancels="invoice_key"),
]

if __name__ == "__main__":
    serve("fiscal", RESOURCES)
