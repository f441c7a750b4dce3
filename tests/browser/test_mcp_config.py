"""Copying the MCP configuration, in Chromium at 1280 and 390 px with axe: a team admin makes a
token of all the team's tools on a tool's tokens page, copies the desktop assistant's
configuration with its button, and that copied configuration (its address and token) lists the
team's tools through the official SDK's client; the tool's page offers the address to copy.

Nothing is mocked: daphne on the test database, the SDK client over loopback HTTP.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import anyio
import pytest
from playwright.sync_api import Page, expect

from tests.browser.checks import accessible_and_fits
from tests.browser.pages import log_in
from tests.factories import MembershipFactory, UserFactory
from tests.live import LiveServer
from tests.tools.conftest import publish_version
from tools.services.activations import activation_decide, activation_request

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

WIDTHS = ((1280, 900), (390, 844))


def _tool_in_use(people: dict[str, Any]) -> None:
    ada = UserFactory(username="ada")
    MembershipFactory(team=people["team"], user=ada, role="admin")
    version = publish_version(people["team"], visibility="public")
    activation_decide(activation=activation_request(team=people["team"], version=version,
                                                    user=ada), user=ada, approve=True)


def _tool_names(url: str, header: str) -> list[str]:
    """The tools the copied configuration reaches (the SDK's client, in its own loop)."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async def names() -> list[str]:
        http = httpx2.AsyncClient(headers={"Authorization": header})
        async with Client(streamable_http_client(url, http_client=http),
                          mode="legacy") as assistant:
            return [tool.name for tool in (await assistant.list_tools()).tools]

    return anyio.run(names)


def _copied(page: Page, button: str) -> str:
    page.get_by_role("button", name=button).click()
    expect(page.get_by_role("button", name="Copied")).to_be_visible()
    return str(page.evaluate("navigator.clipboard.readText()"))


def test_an_admin_copies_the_assistants_configuration(
        server: LiveServer, people: dict[str, Any], context_factory: Any) -> None:
    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(_tool_in_use, people).result()
    tool_page = f"{server.url}t/acme/tools/month-totals/"
    for width, height in WIDTHS:
        context = context_factory(viewport={"width": width, "height": height},
                                  bypass_csp=True)  # axe is an inline script
        context.grant_permissions(["clipboard-read", "clipboard-write"],
                                  origin=server.url.rstrip("/"))
        page = context.new_page()
        log_in(page, server, "ada")

        page.goto(tool_page)
        expect(page.get_by_role("heading", name="From an assistant (MCP)")).to_be_visible()
        assert _copied(page, "Copy the address") == f"{server.url}mcp/acme/"
        accessible_and_fits(page, "the tool's page", width)

        page.get_by_role("link", name="API tokens").first.click()
        page.get_by_label("Name").fill(f"Claude at {width} px")
        page.get_by_label("All of Acme’s tools (for an assistant, over MCP)").check()
        page.get_by_role("button", name="Create token").click()
        expect(page.get_by_text("the assistant’s configuration with it")).to_be_visible()
        accessible_and_fits(page, "the tokens page with a new token", width)
        config = json.loads(_copied(page, "Copy the configuration"))

        entry = config["mcpServers"]["acme-tools"]
        url = entry["args"][entry["args"].index("mcp-remote") + 1]
        header = entry["env"]["AUTH_HEADER"]
        assert url == f"{server.url}mcp/acme/" and header.startswith("Bearer actl_")
        assert page.get_by_text(header.removeprefix("Bearer ")).first.is_visible()
        with ThreadPoolExecutor(max_workers=1) as pool:
            names = pool.submit(_tool_names, url, header).result()
        assert "month-totals__greet" in names
        expect(page.get_by_role("cell", name="all tools").first).to_be_visible()
