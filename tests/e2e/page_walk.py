"""Walk Nexo as a person does and read what they read (ADR-021).

``morning_with_everything`` fills the demo morning with an order in each state, a refused one, a pending
authorization and a dead letter with a JSON error; ``walk`` follows every same-site link from the home page
for one logged-in person, and ``every_page`` adds the morning's orders opened by their address: the pages the
word test reads and the browser test (axe-core, the phone layout) opens. ``visible_text`` is what a person
reads on a page: text outside tags and the attributes a browser shows (title, placeholder, alt, aria-label,
a button's value), never `data-*`, never a script, a hidden field or the collapsed technical detail
(`data-technical`) whose summary is all they see.
"""

from __future__ import annotations

import html as html_lib
import re
from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit

from nexo.outbox.order_events import order_payload
from tests.dead_letter_factory import make_dead_letter
from tests.e2e.lifecycle_support import PLATINO, as_user, cancel, dispatch, enter, received_by_warehouse
from tests.helpers import csrf_token

USERS = ("vendedor1", "vendedor2", "laura", "sergio", "marta")
# Developer language a person must not read (ADR-021): enums, codes, rule numbers, JSON, files, English results.
DEVELOPER_LANGUAGE = {
    "an enum": re.compile(r"\b[A-Z][A-Z0-9]+(?:_[A-Z0-9]+)+\b"),
    "a state code": re.compile(
        r"\b(?:CONFIRMADO|RECHAZADO|ANULADO|ANULADA|DESPACHADO|PENDIENTE|FACTURADO|ENTREGADO|FALLIDO|RETIRADO|"
        r"REINTENTO|BLANDA|FIRME|PLATINO|REGULAR)\b"
    ),
    "a snake_case code": re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b"),
    "a camelCase name": re.compile(r"\b[a-z]+[A-Z][A-Za-z]*\b"),
    "a dotted code": re.compile(r"\b[a-z]+\.[a-z]+_[a-z_]+\b"),
    "a rule or ADR number": re.compile(r"\b(?:RN|ADR|CU)-\d"),
    "a file path": re.compile(r"\b[\w/]+\.py\b|\bnexo/"),
    "JSON": re.compile(r"\{\s*\""),
    "cents": re.compile(r"_cents\b|\bcents\b"),
    "an English word of the code": re.compile(
        r"\b(?:confirmed|rejected|pending_authorization|pending|resolved|discarded|outbox|RUNNING|STARTING|FATAL|"
        r"BACKOFF|STOPPED|EXITED|worker|relay|Idempotency|null|NULL|None|True|False|HTTP|Traceback)\b"
    ),
}
SHOWN_ATTRIBUTES = ("title", "placeholder", "alt", "aria-label")
_SKIPPED = {"script", "style", "template"}
_VOID = {"input", "br", "img", "meta", "link", "hr", "area", "col", "source", "wbr"}


class _Reader(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skip: list[str] = []  # tags whose content nobody reads, innermost last

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if self.skip:
            if tag == self.skip[-1]:
                self.skip.append(tag)
            return
        if tag in _SKIPPED or "data-technical" in attributes or "hidden" in attributes:
            if tag in _VOID:
                return
            self.skip.append(tag)
            if "data-technical" in attributes:
                self.parts.append("Detalle técnico")
            return
        self.parts.extend(attributes[name] or "" for name in SHOWN_ATTRIBUTES if name in attributes)
        if tag == "input" and attributes.get("type") in ("submit", "button"):
            self.parts.append(attributes.get("value") or "")

    def handle_endtag(self, tag):
        if self.skip and tag == self.skip[-1]:
            self.skip.pop()

    def handle_data(self, data):
        if not self.skip:
            self.parts.append(data)


def visible_text(page: str) -> str:
    """What a person reads on the page (see the module docstring)."""
    reader = _Reader()
    reader.feed(page)
    return " ".join(" ".join(reader.parts).split())


def developer_language(page: str) -> dict[str, list[str]]:
    """Every piece of developer language in the page's visible text, by kind (empty when it reads well)."""
    text = visible_text(page)
    found = {kind: sorted(set(pattern.findall(text))) for kind, pattern in DEVELOPER_LANGUAGE.items()}
    return {kind: hits for kind, hits in found.items() if hits}


_LINK = re.compile(r'<a\s[^>]*href="([^"#]*)')


def links(page: str, base: str) -> set[str]:
    """The same-site pages a page links to (path and query), static files left out."""
    found = set()
    for href in _LINK.findall(page):
        url = urljoin(base, html_lib.unescape(href))
        parts = urlsplit(url)
        if parts.netloc not in ("", "localhost") or parts.path.startswith("/static/") or not parts.path:
            continue
        found.add(parts.path + (f"?{parts.query}" if parts.query else ""))
    return found


def walk(client, start: str = "/", limit: int = 120) -> dict[str, tuple[int, str, str]]:
    """Every page reachable by links from `start`: {url: (status, html, the page that linked it)}."""
    seen: dict[str, tuple[int, str, str]] = {}
    queue = [(start, "the start")]
    while queue and len(seen) < limit:
        url, where = queue.pop(0)
        if url in seen:
            continue
        response = client.get(url)
        body = response.get_data(as_text=True) if response.mimetype == "text/html" else ""
        response.close()  # a streamed download (the orders' CSV) ends its generator in this request's context
        seen[url] = (response.status_code, body, where)
        if response.status_code == 200:
            queue.extend((link, url) for link in sorted(links(body, url)) if link not in seen)
        elif response.status_code in (301, 302, 303) and (target := links(f'<a href="{response.location}">', url)):
            queue.extend((link, url) for link in target)
    return seen


def every_page(client, morning: dict) -> dict[str, tuple[int, str, str]]:
    """What `walk` reaches from the home page, plus each of the morning's orders opened by its address (an order
    not linked for this person is there too, with whatever it answered them)."""
    pages = walk(client, limit=200)
    for order in morning["orders"]:
        url = f"/orders/{order}"
        if url not in pages:
            response = client.get(url)
            pages[url] = (response.status_code, response.get_data(as_text=True), "the order's address")
    return pages


# The order form again with more empty rows (`?rows=10` … `?rows=50`): the same page for a browser's checks.
_MORE_ROWS = re.compile(r"[?&]rows=")


def pages_for_a_browser(pages: dict[str, tuple[int, str, str]]) -> list[str]:
    """The HTML pages of `every_page` that opened (200), in order, the order form's extra-row variants left out."""
    return sorted(url for url, (status, html, _) in pages.items() if status == 200 and html and not _MORE_ROWS.search(url))


def morning_with_everything(client, auth, db) -> dict:
    """Orders in every state, a pending authorization, a refused one, a dead letter; returns their ids.

    "orders" are, in this order: partly dispatched, cancelled, pending, rejected, confirmed, dispatched.
    """
    shipped = enter(client, auth, [("COR-200", 3)], client_name=PLATINO)
    received_by_warehouse(db, shipped)
    cancelled = enter(client, auth, [("TOR-010", 2)], client_name=PLATINO)
    assert cancel(client, cancelled).status_code == 303
    pending = enter(client, auth, [("CAB-045", 2)], client_name=PLATINO)
    refused = enter(client, auth, [("CAB-045", 3)], client_name=PLATINO, salesperson="vendedor2")
    confirmed = enter(client, auth, [("TOR-010", 5)])
    dispatched = enter(client, auth, [("CAB-045", 1)])
    received_by_warehouse(db, dispatched, ticket="DEP-9")
    as_user(client, auth, "sergio")
    assert dispatch(client, shipped, {"COR-200": "1"}).status_code == 303
    assert dispatch(client, dispatched).status_code == 303  # everything: DESPACHADO
    as_user(client, auth, "laura")
    queue = client.get("/credit/queue").get_data(as_text=True)
    rejected = client.post(f"/credit/queue/{refused}/reject", data={"csrf_token": csrf_token(queue), "reason": "sin garantía"})
    assert rejected.status_code == 303
    with db.reading() as conn:
        number = conn.execute("SELECT number FROM orders WHERE id = %s", [confirmed]).fetchone()["number"]
        states = conn.execute("SELECT status FROM orders WHERE id = ANY(%s)", [[shipped, dispatched]]).fetchall()
    assert sorted(row["status"] for row in states) == ["DESPACHADO", "DESPACHADO_PARCIAL"]
    payload = order_payload(
        order_id=confirmed,
        number=number,
        client_id="00000000-0000-0000-0000-000000000000",
        client_name="Corralón del Sur",
        tier="REGULAR",
        warehouse_id="CEN",
        lines=[("TOR-010", 5, 15_000)],
        total_cents=75_000,
    )
    dead = make_dead_letter(
        db, http_status=503, error='HTTP 503: {"detail": "servicio no disponible"}', attempts=3, payload=payload
    )
    auth.logout()
    return {"orders": [shipped, cancelled, pending, refused, confirmed, dispatched], "dead_letter": dead}
