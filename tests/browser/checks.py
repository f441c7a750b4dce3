"""The check every page of a browser test passes: no serious or critical axe-core finding, and
nothing wider than the window (no sideways scrolling on a phone)."""

from __future__ import annotations

from playwright.sync_api import Page

from tests.browser.test_accessibility import FAILING, audit, describe
from tests.browser.test_layout import overflow


def accessible_and_fits(page: Page, name: str, width: int) -> None:
    serious = [v for v in audit(page) if v["impact"] in FAILING]
    assert not serious, f"{name} at {width} px: {describe(serious)}"
    sticking_out = overflow(page)
    assert sticking_out["width"] <= sticking_out["window"], f"{name} at {width} px: " \
        f"{sticking_out}"
