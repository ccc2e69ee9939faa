"""The API's webhook subscriptions (ADR-022): an integration registers a URL for its own orders' events.

Each creation and end is audited with the key that asked. The notices themselves are outbox events
(nexo/outbox/webhooks.py); this module only manages who hears.
"""

from __future__ import annotations

from flask import current_app

from nexo import audit
from nexo.api.http import json_response
from nexo.api.keys import Principal
from nexo.api.problems import ApiProblem
from nexo.api.schemas import WebhookIn
from nexo.extensions import get_db
from nexo.outbox import subscriptions
from nexo.outbox.webhooks import url_problem


def create(principal: Principal, body: WebhookIn):
    """201 with the subscription and its secret (shown this once), or a refusal that keeps nothing."""
    settings = current_app.config["NEXO_SETTINGS"]
    problem = url_problem(body.url, production=not settings.webhook_private_targets)
    if problem is not None:
        raise ApiProblem("invalid_request", "The request does not match the schema; see errors.", errors={"url": [problem]})
    with get_db().transaction() as tx:
        if subscriptions.live_count(tx.conn, principal.key_id) >= subscriptions.MAX_PER_KEY:
            raise ApiProblem(
                "webhook_limit",
                f"This key already has {subscriptions.MAX_PER_KEY} live subscriptions; delete one first. Nothing was created.",
            )
        row = subscriptions.create(tx.conn, api_key_id=principal.key_id, url=body.url, events=list(body.events))
        audit.append(
            tx.conn,
            actor=principal.user.username,
            action="webhook.created",
            object_type="webhook_subscription",
            object_id=row["id"],
            details={"api_key": principal.key_name, "url": row["url"], "events": row["events"]},
        )
        tx.commit()
    return json_response(dict(row), 201, headers={"Location": f"/api/v1/webhooks/{row['id']}"})


def listed(principal: Principal):
    """200 with the key's live subscriptions, without their secrets."""
    with get_db().reading_one() as conn:
        rows = subscriptions.of_key(conn, principal.key_id)
    return json_response({"webhooks": [dict(row) for row in rows]})


def delete(principal: Principal, subscription_id: int):
    """204 once the subscription is ended and its undelivered notices withdrawn; 404 if the key has no such one."""
    with get_db().transaction() as tx:
        withdrawn = subscriptions.end(tx.conn, subscription_id, api_key_id=principal.key_id, actor=principal.user.username)
        if withdrawn is None:
            raise ApiProblem("not_found", "This key has no live webhook subscription with that id.")
        audit.append(
            tx.conn,
            actor=principal.user.username,
            action="webhook.deleted",
            object_type="webhook_subscription",
            object_id=subscription_id,
            details={"api_key": principal.key_name, "notices_withdrawn": withdrawn},
        )
        tx.commit()
    return current_app.response_class(status=204)
