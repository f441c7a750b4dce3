"""Every page of the journey passes an automated accessibility audit at 1280x800 and 390x844:
axe-core (vendored in tests/browser/vendor, see its README) is injected by Playwright and finds
no violation of impact "serious" or "critical". Each page's result is printed (`-s` shows it):
the page, the width and the number of violations by impact (minor and moderate ones are listed
but do not fail the test)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page

from tests.browser.journey import WIDTHS, journey_data, journey_pages, visit, walk_wizard
from tests.browser.pages import log_in
from tests.live import LiveServer

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

AXE = Path(__file__).resolve().parent / "vendor" / "axe.min.js"
FAILING = ("serious", "critical")
# Every rule axe runs by default (WCAG 2.0-2.2 A and AA plus best practices); none is disabled.
AXE_RUN = """async () => {
    const result = await axe.run(document, {resultTypes: ['violations']});
    return result.violations.map(v => ({
        id: v.id, impact: v.impact, help: v.help, count: v.nodes.length,
        targets: v.nodes.slice(0, 3).map(n => n.target.join(' ')),
        why: (v.nodes[0].failureSummary || '').split('\\n').slice(1, 2).join('').trim()}));
}"""


def audit(page: Page) -> list[dict[str, Any]]:
    page.wait_for_load_state("load")
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.add_script_tag(path=str(AXE))
    return list(page.evaluate(AXE_RUN))


def describe(violations: list[dict[str, Any]]) -> str:
    return "; ".join(f"{v['id']} ({v['impact']}, {v['count']}x): {v['help']} at "
                     f"{', '.join(v['targets'])} ({v['why']})" for v in violations)


@pytest.fixture
def journey(transactional_db: None) -> dict[str, Any]:
    return journey_data()


def test_every_page_of_the_journey_passes_an_accessibility_audit(
        journey: dict[str, Any], server: LiveServer, context_factory: Any) -> None:
    results: list[tuple[str, int, list[dict[str, Any]]]] = []
    worded: list[str] = []

    for width, height in WIDTHS:
        pages: dict[str, Page] = {}

        def as_user(user: str, width: int = width, height: int = height,
                    pages: dict[str, Page] = pages) -> Page:
            if user not in pages:
                # The page's CSP forbids inline scripts, which is what add_script_tag adds.
                context = context_factory(viewport={"width": width, "height": height},
                                          bypass_csp=True)
                pages[user] = context.new_page()
                log_in(pages[user], server, user)
            return pages[user]

        def check(page: Page, name: str, width: int = width) -> None:
            results.append((name, width, audit(page)))
            # One word for one round of plan, code, tests and checks on every page (issue 48:
            # "iteration" and "attempt" named the same thing on different pages).
            text = page.locator("body").inner_text()
            found = text.lower().find("iteration")
            if found >= 0:
                worded.append(f"{name} at {width} px: \u2026{text[max(found - 60, 0):found + 40]}"
                              "\u2026")

        walk_wizard(as_user("quinn"), check)
        for step in journey_pages(journey):
            page = as_user(step.user)
            visit(page, server.url, step)
            check(page, step.name)

    print(f"\naxe-core {AXE_VERSION}: violations by impact on each page")
    failing: list[str] = []
    for name, width, violations in results:
        counts = Counter(v["impact"] for v in violations)
        summary = ", ".join(f"{impact} {n}" for impact, n in sorted(counts.items())) or "none"
        print(f"  {width:>4} px  {name}: {summary}")
        for v in violations:
            print(f"           {describe([v])}")
        serious = [v for v in violations if v["impact"] in FAILING]
        if serious:
            failing.append(f"{name} at {width} px: {describe(serious)}")
    totals = Counter(v["impact"] for _, _, vs in results for v in vs)
    print(f"  {len(results)} page visits; violations by impact: {dict(totals) or 'none'}")
    assert failing == [], "serious or critical accessibility violations:\n" + "\n".join(failing)
    assert worded == [], f"pages that say \"iteration\" for an attempt: {worded}"


AXE_VERSION = AXE.read_text(encoding="utf-8")[:40].split("axe v", 1)[-1].split()[0]
