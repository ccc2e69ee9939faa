"""Every template compiles against the app's one set of template helpers (money, local_time, duration); every table a
phone scrolls sideways takes the keyboard's focus."""

from __future__ import annotations

import re
from pathlib import Path

TEMPLATES = Path(__file__).resolve().parents[2] / "templates"
# The names the helpers had before create_app registered them once.
OLD_NAMES = re.compile(r"\|\s*(ars|ops_duration)\b|(?<![\w.|])(ars|money|moment|when|duration|local_time)\(")
TABLE = re.compile(r"<table\b[^>]*>")
# The tables static/nexo.css reflows on a phone instead of scrolling them.
REFLOWED = re.compile(r'class="[^"]*\b(stack|order-lines)\b')


def test_every_template_compiles_with_the_registered_filters(app):
    names = [p.relative_to(TEMPLATES).as_posix() for p in TEMPLATES.rglob("*.html")]
    for name in names:
        app.jinja_env.get_template(name)  # an unknown filter fails here, at compile time
    assert {"money", "local_time", "duration"} <= set(app.jinja_env.filters)


def test_no_template_uses_an_old_helper_name():
    used = {p.name: OLD_NAMES.findall(p.read_text(encoding="utf-8")) for p in TEMPLATES.rglob("*.html")}
    assert {name: found for name, found in used.items() if found} == {}


def test_every_table_a_phone_may_scroll_takes_the_keyboard_focus():
    # nexo.css scrolls a table wider than a phone inside its card: without tabindex a keyboard cannot (WCAG 2.1.1). The
    # browser test sees the tables the demo data makes too wide; this sees the ones longer data would.
    unreachable = {
        p.relative_to(TEMPLATES).as_posix(): tags
        for p in TEMPLATES.rglob("*.html")
        if (
            tags := [
                t for t in TABLE.findall(p.read_text(encoding="utf-8")) if not REFLOWED.search(t) and 'tabindex="0"' not in t
            ]
        )
    }
    assert unreachable == {}
