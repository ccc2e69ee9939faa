"""The fiscal provider's fake: POST /invoices issues an invoice number once per Idempotency-Key."""

from __future__ import annotations

from sandbox.common import serve


def invoice(seq: int) -> dict:
    """The provider's answer for the seq-th invoice it issues."""
    return {"invoice_number": f"A-0001-{seq:08d}", "status": "EMITIDA"}


if __name__ == "__main__":
    serve("fiscal", "invoices", invoice)
