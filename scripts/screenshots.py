"""Screenshots of every page each demo user reaches, at 1280 and 390 px wide (ADR-021), into docs/screenshots/.

Usage, with `make run` running (or any Nexo with the demo users):
    .venv/bin/python scripts/screenshots.py [--url http://127.0.0.1:5000] [--out docs/screenshots] [--limit 25]

Each person logs in through the login form in Debian's Chromium (as the browser tests do), follows the links
of every page from the home page (GET only, same site, at most --limit pages each) and saves
`<user>-<page>-<width>.png`, full page, one page of each shape (one order, one client …) with its ids
replaced by `id`, plus the login page. Rerunnable: the same names are overwritten. Prints one line per page, with
the page's scroll width at 390 px (the layout test fails above 390).
"""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path
from urllib.parse import urljoin, urlsplit

from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import sync_playwright

USERS = ("vendedor1", "laura", "sergio", "marta")
WIDTHS = (1280, 390)
CHROMIUM = "/usr/bin/chromium"
ROOT = Path(__file__).resolve().parent.parent
LINK = re.compile(r'<a\s[^>]*href="([^"#]*)')
# Variants of one page that add nothing to a screenshot: more rows, other pages of a list, filters.
SKIPPED = re.compile(r"[?&](rows|page|size|action|signature|client|tier|salesperson|destination|status|deposit)=")


UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def shape(url: str) -> str:
    """The page a URL is an instance of: '/orders/06ba8b8e-…' → '/orders/id' (one screenshot per shape)."""
    return UUID.sub("id", url)


def slug(url: str) -> str:
    """A stable file name part for a page: '/orders/06ba8b8e-…' → 'orders-id', '/' → 'inicio'."""
    parts = urlsplit(shape(url))
    path = parts.path.strip("/") or "inicio"
    return re.sub(r"[^A-Za-z0-9]+", "-", path + ("-" + parts.query if parts.query else "")).strip("-")[:60]


def walk(page, base: str, limit: int) -> list[str]:
    """The same-site pages reachable from the home page, breadth first, at most `limit`."""
    seen: list[str] = []
    queue = ["/"]
    while queue and len(seen) < limit:
        url = queue.pop(0)
        try:
            response = page.goto(urljoin(base, url))
        except PlaywrightError:  # a download (the orders' CSV), not a page
            continue
        here = urlsplit(page.url)
        url = here.path + (f"?{here.query}" if here.query else "")
        if (
            response is None
            or response.status != 200
            or shape(url) in {shape(u) for u in seen}
            or "text/html" not in response.headers.get("content-type", "")
        ):
            continue
        seen.append(url)
        for href in LINK.findall(page.content()):
            target = urlsplit(urljoin(page.url, href.replace("&amp;", "&")))
            link = target.path + (f"?{target.query}" if target.query else "")
            same_site = target.netloc == urlsplit(base).netloc and not target.path.startswith("/static/")
            same_site = same_site and not target.path.endswith(".csv")
            known = {shape(u) for u in (*seen, *queue)}
            if same_site and not SKIPPED.search(link) and shape(link) not in known:
                queue.append(link)
    return seen


def main() -> None:
    """Log each demo user in, walk their pages and save the screenshots."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", default="http://127.0.0.1:5000")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    parser.add_argument("--limit", type=int, default=25)
    parser.add_argument("--password", default=os.environ.get("NEXO_DEMO_PASSWORD", "nexo-demo"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--disable-gpu"])
        for user in USERS:
            context = browser.new_context(locale="es-AR", viewport={"width": 1280, "height": 900})
            page = context.new_page()
            if user == USERS[0]:  # the page everybody sees first
                for width in WIDTHS:
                    page.set_viewport_size({"width": width, "height": 900 if width > 600 else 844})
                    page.goto(urljoin(args.url, "/login"))
                    page.screenshot(path=str(args.out / f"sin-sesion-login-{width}.png"), full_page=True)
            page.goto(urljoin(args.url, "/login"))
            page.fill("input[name=username]", user)
            page.fill("input[name=password]", args.password)
            page.get_by_role("button", name="Ingresar").click()
            page.wait_for_url(lambda url: "/login" not in url)
            for url in walk(page, args.url, args.limit):
                width_390 = None
                for width in WIDTHS:
                    page.set_viewport_size({"width": width, "height": 900 if width > 600 else 844})
                    page.goto(urljoin(args.url, url))
                    page.screenshot(path=str(args.out / f"{user}-{slug(url)}-{width}.png"), full_page=True)
                    if width == 390:
                        width_390 = page.evaluate("document.documentElement.scrollWidth")
                print(f"{user:10} {url:60} scroll width at 390: {width_390}")
            context.close()
        browser.close()


if __name__ == "__main__":
    main()
