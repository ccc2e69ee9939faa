"""Smaller things people met on the pages (ADR-021): a list's refused filter in Spanish, a page past the end that
does not also say nothing ever arrived, an invoice that will not come said so, a rejected order's billing in
words, the stale-figures page naming its order and client, and the icon browsers ask for on every page."""

from __future__ import annotations

import re

from tests.dead_letter_factory import make_dead_letter
from tests.e2e.lifecycle_support import PLATINO, as_user, enter, page
from tests.helpers import csrf_token


def test_a_refused_page_size_is_explained_in_spanish(client, auth):
    as_user(client, auth, "marta")
    html = client.get("/admin/dead-letters?size=0").get_data(as_text=True)
    assert "El número debe estar entre 1 y 200" in html and "Number must be" not in html
    assert "No es un valor entero válido" in client.get("/admin/dead-letters?size=abc").get_data(as_text=True)


def test_a_warehouse_page_past_the_end_does_not_say_nothing_ever_arrived(client, auth, db):
    as_user(client, auth, "sergio")
    html = page(client, "/warehouse?page=2")
    assert "data-past-the-end" in html and "Todavía no llegó ningún pedido" not in html


def test_an_order_whose_invoice_was_discarded_does_not_wait_for_it_forever(client, auth, db):
    dead = make_dead_letter(db, http_status=422, error='HTTP 422: {"detail": "CUIT inválido"}')
    with db.transaction() as tx:
        tx.execute(
            "UPDATE dead_letter SET status = 'discarded', resolved_at = now(), resolved_by = 'marta',"
            " resolution_note = 'factura manual' WHERE id = %s",
            [dead["id"]],
        )
        tx.commit()
    as_user(client, auth, "vendedor1")
    html = page(client, f"/orders/{dead['order_id']}")
    assert 'data-billing-status="PENDIENTE_FACTURACION"' in html  # the code stays for tests
    assert "el pedido de factura se descartó" in html and ">Factura pendiente<" not in html


def test_the_stale_figures_page_names_the_order_and_the_client(client, auth):
    order = enter(client, auth, [("COR-200", 5)], client_name=PLATINO)
    as_user(client, auth, "laura")
    queue = page(client, "/credit/queue")
    response = client.post(
        f"/credit/queue/{order}/approve",
        data={"csrf_token": csrf_token(queue), "seen_exposure_cents": "0", "seen_limit_cents": "0"},
    )
    html = response.get_data(as_text=True)
    assert response.status_code == 409 and 'data-conflict="figures_changed"' in html
    assert PLATINO in html and re.search(r"Pedido P-\d{6,} de", html)  # its number (ADR-020), not a UUID


def test_the_browser_s_icon_answers_without_a_login(client):
    response = client.get("/favicon.ico")
    response.close()  # a file answer: the test client leaves it open
    assert response.status_code == 200 and response.mimetype == "image/svg+xml"


def test_a_rejected_order_says_its_billing_does_not_apply_not_that_it_does_not_yet(client, auth):
    order = enter(client, auth, [("COR-200", 5)], client_name=PLATINO)  # 16,000 over Platino's free credit
    as_user(client, auth, "laura")
    queue = page(client, "/credit/queue")
    rejected = client.post(f"/credit/queue/{order}/reject", data={"csrf_token": csrf_token(queue), "reason": "sin garantía"})
    assert rejected.status_code == 303
    as_user(client, auth, "vendedor1")
    html = page(client, f"/orders/{order}")
    assert 'data-order-status="RECHAZADO"' in html
    billing = re.search(r'data-billing-status="NO_APLICA">\s*(.*?)\s*</span>', html, re.S)
    assert billing and billing.group(1) == "No corresponde"  # a refused order is never invoiced, not "yet"
    assert "No corresponde todavía" not in html
