"""The order form's client field: a select of every client up to SELECT_LIMIT of them, a lookup past that
(CONTRACT.md: GET /orders/clients?q=), the select built once per process and kept while the list stands.

A distributor's 10,000 clients are a megabyte of <option>s (CONTRACT.md wants every client in that
select). Reading and escaping them for every form was most of the form's CPU once the database had
grown (the growth bench, ADR-011), for a list that changes a few times a month. Migration 0090 gives
the list a version that changes in the same transaction as any client added, removed, renamed or
re-tiered; each form reads that one row and rebuilds the options only when it moved. A version is
never reused, so a stale list is never taken for the current one.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from markupsafe import Markup, escape
from psycopg.rows import DictRow

from nexo.db import Conn
from nexo.orders import queries
from nexo.vocabulary import words

# Up to this many clients the form offers a select of all of them; past it, a lookup (CONTRACT.md): a
# select of 10,000 clients is a megabyte on every form, on a phone too.
SELECT_LIMIT = 500


@dataclass(frozen=True)
class ClientField:
    """What the form shows for the client: the select's options, or (past SELECT_LIMIT) the lookup with
    the client chosen so far, if any."""

    options: Markup | None
    chosen: DictRow | None = None


class ClientOptions:
    """One per web process (create_app); safe to share between its threads."""

    def __init__(self):
        # (version, how many clients, html) replaced whole: a thread reads either the old one or the new.
        self._cached: tuple[uuid.UUID | None, int, str] = (None, 0, "")

    def field(self, conn: Conn, selected: str | None) -> ClientField:
        """The client field, `selected` (a client id the form posted or the lookup chose, possibly garbage)
        marked as chosen.

        Call it before any other read of the form's transaction: the version is read first, so a
        list built from older rows than its version says can never be kept.
        """
        version = queries.client_list_version(conn)
        cached_version, count, html = self._cached
        if version is None or version != cached_version:
            count = queries.client_count(conn)
            html = _options(queries.clients(conn)) if count <= SELECT_LIMIT else ""
            if version is not None:  # no version row: nothing to check a kept list against
                self._cached = (version, count, html)
        chosen = _as_uuid(selected)
        if count > SELECT_LIMIT:
            return ClientField(None, queries.client_by_id(conn, chosen) if chosen else None)
        if chosen is not None:
            value = f'<option value="{chosen}"'
            html = html.replace(f"{value}>", f"{value} selected>", 1)
        return ClientField(Markup(html))


def _options(clients: list[dict]) -> str:
    # Built here rather than by a Jinja loop, several times slower over 10,000 clients (ADR-011).
    # Option text: the client's name (CONTRACT.md) and tier, both escaped.
    return "".join(
        f'<option value="{client["id"]}">{escape(client["name"])} · {escape(words("tier", client["tier"]))}</option>'
        for client in clients
    )


def _as_uuid(text: str | None) -> uuid.UUID | None:
    try:
        return uuid.UUID(text) if text else None
    except ValueError:
        return None
