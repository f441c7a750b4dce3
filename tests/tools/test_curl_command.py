"""The curl commands the tool's pages show work as copied (issue 28, item 4): run with curl
against the live portal (daphne on the test database, the call in the sandbox), they get 200.
The one shown after creating a token sent `-d '{}'` and got 422."""

from __future__ import annotations

import json
import shlex
import subprocess
from typing import Any

import pytest

from marketplace.install_commands import TOKEN_PLACEHOLDER
from tests.live import live_asgi_server, logged_in_browser, post_form, shown_command
from tools.api_commands import curl_command
from tools.models import Activation
from tools.services.tokens import tool_token_create

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def _run(command: str) -> tuple[int, dict[str, Any]]:
    """The command as shown, pasted into bash, plus curl's own flags to read the status."""
    assert command.startswith("curl "), command
    done = subprocess.run(["bash", "-c", command + " --silent --show-error --max-time 60 "
                           "--write-out '\\n%{http_code}'"],
                          capture_output=True, text=True, timeout=90, check=False)
    assert done.returncode == 0, done.stderr
    body, _, status = done.stdout.rpartition("\n")
    return int(status), json.loads(body)


def test_the_curl_commands_on_the_tools_pages_answer_200_as_copied(
        active: Activation, world: dict[str, Any]) -> None:
    with live_asgi_server() as server:
        browser = logged_in_browser(world["admin"], server.url)
        tool_url = f"{server.url}t/acme/tools/month-totals/"
        page = browser.open(tool_url, timeout=30).read().decode()
        shown = shown_command(page, "curl-example")
        # http, as the portal is asked for, and this host
        assert f"{server.url}api/tools/acme/month-totals/totals" in shlex.split(shown)
        raw = tool_token_create(team=world["acme"], plugin=active.plugin, user=world["admin"],
                                name="by hand")[1]
        status, answer = _run(shown.replace(TOKEN_PLACEHOLDER, raw))
        assert status == 200, answer
        assert answer["output"] == {"totals": [{"month": "Jan", "total": 2}]}

        tokens_url = f"{tool_url}tokens/"
        created = post_form(browser, tokens_url, {"name": "accounting"})
        status, answer = _run(shown_command(created, "token-curl-command"))  # its token is in it
        assert status == 200, answer
        assert answer["ok"] is True


def test_a_command_without_an_example_gets_a_body_it_takes_and_answers_200(
        active: Activation, world: dict[str, Any]) -> None:
    """Issue 48: without an example the page printed `-d '{}'`, which failed as printed; a
    command that declares its input gets a value of each field it needs."""
    version = active.version
    version.commands = [{k: v for k, v in c.items() if k != "examples"}
                        for c in version.commands]
    version.save(update_fields=["commands"])
    with live_asgi_server() as server:
        browser = logged_in_browser(world["admin"], server.url)
        page = browser.open(f"{server.url}t/acme/tools/month-totals/", timeout=30).read()
        shown = shown_command(page.decode(), "curl-example")
        assert "-d '{}'" not in shown
        assert f"{server.url}api/tools/acme/month-totals/greet" in shlex.split(shown)
        raw = tool_token_create(team=world["acme"], plugin=active.plugin, user=world["admin"],
                                name="by hand")[1]
        status, answer = _run(shown.replace(TOKEN_PLACEHOLDER, raw))
        assert status == 200, answer
        assert answer["output"] == "Hello, text!"
        assert "a value of each field it needs" in page.decode()


def test_the_body_is_quoted_for_the_shell_whatever_the_example_holds() -> None:
    shown = curl_command(url="http://portal.test/api/tools/a/b/c",
                         payload={"text": "it's \"quoted\" $HOME"})
    words = shlex.split(shown)
    assert json.loads(words[words.index("-d") + 1]) == {"text": "it's \"quoted\" $HOME"}
    assert "Bearer YOUR-TOKEN" in shown
