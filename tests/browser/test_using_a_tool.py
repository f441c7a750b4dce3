"""Using a tool is not programming (issue 48), in Chromium at 1280 and 390 px, axe finding
nothing serious and nothing scrolling sideways: the bookkeeper types a list as `mon, tue`, a
budget with a decimal comma and pastes a table with `12,50`; the result shows as parts in the
plugin's order (a table of records with its numbers as numbers, a value, a list), not JSON in
the database's key order; "Run it again" opens the form with what she typed.

The call runs for real: a Dramatiq worker in this process, the plugin in the sandbox.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from django.db import connections
from playwright.sync_api import Page, expect

from marketplace.models import PluginVersion
from teams.models import Membership, Team
from tests.browser.checks import accessible_and_fits
from tests.browser.journey import WIDTHS
from tests.browser.pages import log_in
from tests.live import LiveServer
from tests.tools.conftest import PLUGIN_TOML, publish_version
from tools.models import Invocation
from tools.services.activations import activation_decide, activation_request

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

SPENDING_TOML = PLUGIN_TOML + '''
[[commands]]
name = "spending"
description = "Adds up what was spent per shop."
'''
SPENDING_PY = '''"""Spending per shop, in the order a person reads it."""


class Plugin:
    def on_initialize(self, api):
        self.api = api

    def on_event(self, event, data):
        pass

    def on_command(self, name, payload):
        sums = {}
        for row in payload["rows"]:
            sums[row["shop"]] = sums.get(row["shop"], 0) + row["amount"]
        spent = sum(sums.values())
        # Not the database's order (shorter keys first): shops, left, days.
        return {"shops": [{"shop": s, "amount": a} for s, a in sums.items()],
                "left": payload["budget"] - spent, "days": payload["days"]}
'''
EXAMPLE = {"input": {"rows": [{"shop": "REWE", "amount": 12.5}], "budget": 20.0,
                     "days": ["mon", "tue"]},
           "output": {"shops": [{"shop": "REWE", "amount": 12.5}], "left": 7.5,
                      "days": ["mon", "tue"]}}


def spending_tool(team: Team, admin: Any) -> PluginVersion:
    """month-totals with a "spending" command (its example: a table, a number, a list), in
    use by the team. Built in a thread: the services announce through async_to_sync
    (tests/browser/conftest.py)."""
    def build() -> PluginVersion:
        try:
            version = publish_version(team, toml=SPENDING_TOML, body=SPENDING_PY)
            version.commands = [*version.commands[:-1], {
                "name": "spending", "description": "Adds up what was spent per shop.",
                "examples": [EXAMPLE]}]
            version.save(update_fields=["commands"])
            asked = activation_request(team=team, version=version, user=admin)
            activation_decide(activation=asked, user=admin, approve=True)
            return version
        finally:
            connections.close_all()

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(build).result()


def headings_in_order(page: Page) -> list[str]:
    return page.locator("#result h2").all_inner_texts()


def test_a_tool_reads_what_people_type_and_answers_in_the_plugins_order(
        server: LiveServer, worker: Any, people: dict[str, Any], context_factory: Any) -> None:
    Membership.objects.filter(user=people["reviewer"]).update(role="admin")
    spending_tool(people["team"], people["reviewer"])
    for width, height in WIDTHS:
        page = context_factory(viewport={"width": width, "height": height},
                               bypass_csp=True).new_page()
        log_in(page, server, "rita")
        page.goto(f"{server.url}t/acme/tools/month-totals/")
        form = page.locator("#command-spending")
        form.get_by_label("Rows (needed)").fill("shop;amount\nREWE;12,50\nALDI;3\nREWE;1")
        form.get_by_label("Budget (needed)").fill("20,5")
        form.get_by_label("Days (needed)").fill("mon, tue")
        accessible_and_fits(page, "the tool's form", width)
        form.get_by_role("button", name="Run spending").click()

        expect(page.locator("#result .badge.ok")).to_have_text("Done", timeout=90_000)
        call = Invocation.objects.filter(command="spending").latest("pk")
        assert call.payload == {"rows": [{"shop": "REWE", "amount": 12.5},
                                         {"shop": "ALDI", "amount": 3},
                                         {"shop": "REWE", "amount": 1}],
                                "budget": 20.5, "days": ["mon", "tue"]}
        assert list(call.output) != ["shops", "left", "days"]  # jsonb's own order
        assert headings_in_order(page) == ["shops", "left", "days"]  # the plugin's
        table = page.get_by_role("region", name="Result: shops (table)")
        expect(table.locator("tbody tr").first).to_have_text("REWE13.5")
        expect(table.locator("td.num").first).to_have_text("13.5")  # a number, right-aligned
        expect(page.get_by_role("region", name="Result: left")).to_contain_text("4")
        expect(page.get_by_role("region", name="Result: days").get_by_role("listitem")
               ).to_have_text(["mon", "tue"])
        accessible_and_fits(page, "the tool's result", width)

        page.get_by_role("link", name="Run it again").click()
        form = page.locator("#command-spending")
        expect(form.get_by_role("status")).to_contain_text("Filled in with your earlier call")
        expect(form.get_by_label("Rows (needed)")).to_have_value(
            "shop,amount\nREWE,12.5\nALDI,3\nREWE,1\n")
        expect(form.get_by_label("Budget (needed)")).to_have_value("20.5")
        expect(form.get_by_label("Days (needed)")).to_have_value("mon, tue")
        accessible_and_fits(page, "the tool's form, filled in again", width)
