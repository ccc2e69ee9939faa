"""Every page of every role in Chromium (ADR-021): axe-core finds no serious or critical violation on it, at 1280 px
and on a phone; at 390 × 844 the page is no wider than the screen (its scroll width is the viewport's) and no amount
wraps away from its "$".

The pages are page_walk's (the word test's): everything each demo user reaches by links from the home page, with
orders in every state, a pending authorization, a refused order and a dead letter, plus the morning's orders opened by
their address. One browser context per person, logged in once; each page is opened once and checked at both widths.
The pages no link leads to (the login page, a refused order form, the 403 and 404 pages) are checked apart.
"""

from __future__ import annotations

import re

import pytest

from tests.e2e.browser_fixtures import fill_order
from tests.e2e.lifecycle_support import PLATINO, as_user
from tests.e2e.page_walk import USERS, every_page, morning_with_everything, pages_for_a_browser

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 900}
WIDTH = "() => Math.max(document.documentElement.scrollWidth, document.body.scrollWidth)"
# Every "$" amount drawn on one line (a box that wraps has more than one client rect).
AMOUNTS_ON_TWO_LINES = """() => [...document.querySelectorAll('.amount')]
  .filter(el => el.getClientRects().length > 1).map(el => el.textContent)"""
# axe-core's default rules (WCAG 2 A and AA, best practices); "serious" and "critical" are the impacts that block a
# person (no name for a control, text that cannot be read, a region a keyboard cannot reach).
AXE = """async () => {
  const result = await axe.run(document, {resultTypes: ['violations']});
  return result.violations.filter(v => v.impact === 'serious' || v.impact === 'critical').flatMap(v =>
    v.nodes.map(node => `${v.impact} ${v.id} (${v.help}) at ${node.target.join(' ')}: ${node.failureSummary}`));
}"""


def problems_on(page) -> list[str]:
    """What fails on the page shown now: axe-core at 1280 px and at 390 px, and the phone layout."""
    problems = []
    page.set_viewport_size(DESKTOP)
    problems += [f"1280 px: {violation}" for violation in page.evaluate(AXE)]
    page.set_viewport_size(PHONE)
    problems += [f"390 px: {violation}" for violation in page.evaluate(AXE)]
    if (width := page.evaluate(WIDTH)) > PHONE["width"]:
        problems.append(f"390 px: the page is {width} px wide")
    problems += [f"390 px: the amount {amount!r} wraps" for amount in page.evaluate(AMOUNTS_ON_TWO_LINES)]
    return problems


def report(problems: dict[str, list[str]]) -> str:
    """One line per page and problem, for the failure message."""
    return "\n".join(f"{url}: {problem}" for url, found in problems.items() for problem in found)


def with_axe(page, axe_core: str):
    """The page, with axe-core in every document its context opens from now on (an init script: the pages' CSP
    allows no inline script, and it does not apply to these)."""
    page.context.add_init_script(script=axe_core)
    return page


@pytest.fixture
def morning(client, auth, db) -> dict:
    return morning_with_everything(client, auth, db)


@pytest.mark.parametrize("user", USERS)
def test_every_page_a_person_reaches_passes_axe_and_fits_a_phone(people, shots, client, auth, axe_core, morning, user):
    as_user(client, auth, user)
    urls = pages_for_a_browser(every_page(client, morning))
    assert len(urls) >= 5, urls  # the walk really walked
    page = with_axe(people.login(user), axe_core)
    problems = {}
    for url in urls:
        response = page.goto(url)
        assert response is not None and response.status == 200, (url, response and response.status)
        if found := problems_on(page):
            shots.take(page, f"{user}-{re.sub(r'[^a-z0-9]+', '-', url)[:48].strip('-')}-390")
            problems[url] = found
    assert not problems, f"{user}'s pages:\n{report(problems)}"


def test_the_pages_no_link_leads_to_pass_axe_and_fit_a_phone(people, shots, browser, browser_web, axe_core):
    problems = {}
    context = browser.new_context(base_url=browser_web.url, locale="es-AR")
    people.contexts.append(context)  # closed with the others
    anonymous = with_axe(context.new_page(), axe_core)
    anonymous.goto("/login")
    problems["/login"] = problems_on(anonymous)
    anonymous.locator("input[name=username]").fill("vendedor1")
    anonymous.locator("input[name=password]").fill("not the password")
    anonymous.get_by_role("button", name="Ingresar").click()
    anonymous.wait_for_selector(".flash, .field-error")
    problems["/login, a wrong password"] = problems_on(anonymous)

    page = with_axe(people.login("vendedor1"), axe_core)
    for url, status in [("/orders/all", 403), ("/orders/00000000-0000-0000-0000-000000000000", 404)]:
        response = page.goto(url)
        assert response is not None and response.status == status, url
        problems[url] = problems_on(page)
    page.goto("/orders/new")
    fill_order(page, PLATINO, [("COR-118", 2)])
    page.get_by_role("button", name="Confirmar pedido").click()
    page.wait_for_selector("[data-reason='insufficient_stock']")
    problems["/orders/new, refused"] = problems_on(page)
    problems = {url: found for url, found in problems.items() if found}
    assert not problems, report(problems)


def test_a_refused_order_keeps_the_form_on_the_phone_and_the_sku_box_its_width(people, shots):
    page = people.login("vendedor1")
    page.set_viewport_size(PHONE)
    page.goto("/orders/new")
    before = page.locator("input[name='lines-0-sku']").bounding_box()
    fill_order(page, PLATINO, [("COR-118", 2)])
    page.get_by_role("button", name="Confirmar pedido").click()
    page.wait_for_selector("[data-reason='insufficient_stock']")
    shots.take(page, "refused-390")
    after = page.locator("input[name='lines-0-sku']").bounding_box()
    assert before and after and after["width"] >= before["width"] - 1 and after["width"] >= 80
    assert page.evaluate(WIDTH) <= PHONE["width"]
