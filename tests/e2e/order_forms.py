"""Helpers of the order page tests: read the order form and post it like a browser does."""

from __future__ import annotations

import html
import re

from tests.helpers import csrf_token

_REQUEST_ID = re.compile(r'name="request_id" value="([0-9a-f-]{36})"')
_ORDER_URL = re.compile(r"/orders/([0-9a-f-]{36})$")


def request_id_of(html: str) -> str:
    """The requestId hidden in an order form page."""
    match = _REQUEST_ID.search(html)
    assert match, "no request_id on the page"
    return match.group(1)


def client_option(html: str, name: str) -> str:
    """The option value (client uuid) whose text contains the client's name."""
    match = re.search(r'<option value="([0-9a-f-]{36})"[^>]*>' + re.escape(name), html)
    assert match, f"no option for {name}"
    return match.group(1)


def form_data(html: str, client: str, lines, *, deposit: str = "CEN", request_id: str | None = None, **extra) -> dict:
    """The POST body a browser would send for this form, filled with the given client and lines."""
    data = {
        "csrf_token": csrf_token(html),
        "request_id": request_id or request_id_of(html),
        "client_id": client_option(html, client),
        "deposit_id": deposit,
        **extra,
    }
    for index, (sku, quantity) in enumerate(lines):
        data[f"lines-{index}-sku"] = sku
        data[f"lines-{index}-quantity"] = str(quantity)
    return data


def order_id_from(location: str) -> str:
    """The order id at the end of a redirect Location."""
    match = _ORDER_URL.search(location)
    assert match, f"not an order URL: {location}"
    return match.group(1)


def resubmitted_form(page: str) -> dict:
    """The fields of the 503 page's "send the same form again" form."""
    form = re.search(r"<form [^>]*data-resubmit>(.*?)</form>", page, re.S)
    assert form, "no resubmit form on the 503 page"
    return {
        html.unescape(name): html.unescape(value)
        for name, value in re.findall(r'<input type="hidden" name="([^"]*)" value="([^"]*)">', form.group(1))
    }
