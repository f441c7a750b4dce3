"""The curl commands the tool's pages show work as copied (issue 28, item 4): run with curl
against the live portal (daphne on the test database, the call in the sandbox), they get 200.
The one shown after creating a token sent `-d '{}'` and got 422.

The one a generated README prints works as printed too (issue 44): rendered by the portal's
Markdown it is a code block of its own (it rendered as one inline line, `sh curl ...`, which
`sh` took for a script named curl), and run with `sh -c` with the placeholders replaced, it
gets 200 from the live portal."""

from __future__ import annotations

import html
import json
import re
import shlex
import subprocess
from typing import Any

import pytest
from django.urls import resolve

from autocoder.engine.scaffold import scaffold_files
from autocoder.engine.spec import spec_from_dict
from autocoder.markdown import render_markdown
from autocoder.plugins.api_calls import PORTAL_PLACEHOLDER, TEAM_PLACEHOLDER
from marketplace.install_commands import TOKEN_PLACEHOLDER
from tests.live import live_asgi_server, logged_in_browser, post_form, shown_command
from tools.api_commands import curl_command
from tools.models import Activation
from tools.services.tokens import tool_token_create

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def _run(command: str, shell: str = "bash") -> tuple[int, dict[str, Any]]:
    """The command as shown, pasted into `shell`, plus curl's own flags to read the status."""
    assert command.startswith("curl "), command
    done = subprocess.run([shell, "-c", command + " --silent --show-error --max-time 60 "
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


def month_totals_readme(rows: list[dict[str, Any]]) -> str:
    """The README the scaffold writes for the tools' test plugin (month-totals, its command
    totals), with `rows` as its example's input."""
    return scaffold_files(spec_from_dict({
        "name": "month-totals", "summary": "Adds up amounts per month.",
        "commands": [{"name": "totals", "description": "Adds up the amounts of each month.",
                      "examples": [{"input": {"rows": rows}, "output": {}}]}],
    }))["README.md"]


def readme_curl_blocks(readme: str) -> list[str]:
    """The code blocks of the README as the portal renders it that hold a curl command, as a
    person copies them from the page."""
    page = render_markdown(readme)
    block = re.compile(r"<pre><code[^>]*>(.*?)</code></pre>", re.S)
    blocks = [html.unescape(body) for body in block.findall(page)]
    inline = [html.unescape(c) for c in re.findall(r"<code>(.*?)</code>", block.sub("", page),
                                                   re.S) if "curl" in c]
    assert inline == [], f"a curl command rendered as inline code: {inline}"
    return [block for block in blocks if "curl" in block]


def test_the_generated_readmes_curl_is_a_block_of_its_own_built_like_the_tool_pages() -> None:
    [block] = readme_curl_blocks(month_totals_readme([{"month": "Jan's", "amount": 2}]))
    assert block.startswith("curl -X POST ") and block.endswith("\n"), block
    url = f"{PORTAL_PLACEHOLDER}/api/tools/{TEAM_PLACEHOLDER}/month-totals/totals"
    assert block.rstrip("\n") == curl_command(url=url, payload={"rows": [{"month": "Jan's",
                                                                          "amount": 2}]})
    words = shlex.split(block)  # the shell's reading: the URL, the headers, the JSON body
    assert words[:3] == ["curl", "-X", "POST"] and words[3] == url
    assert resolve(url.removeprefix(PORTAL_PLACEHOLDER)).view_name == "tools:api"
    assert json.loads(words[words.index("-d") + 1]) == {"rows": [{"month": "Jan's",
                                                                  "amount": 2}]}


def test_the_generated_readmes_curl_answers_200_as_printed(
        active: Activation, world: dict[str, Any]) -> None:
    """The README of the plugin the tools' tests activate, as the scaffold writes it; its
    command, placeholders replaced, run by sh (dash here)."""
    [block] = readme_curl_blocks(month_totals_readme([{"month": "Jan", "amount": 2},
                                                      {"month": "Jan", "amount": 3}]))
    raw = tool_token_create(team=world["acme"], plugin=active.plugin, user=world["admin"],
                            name="from the README")[1]
    with live_asgi_server() as server:
        command = (block.strip().replace(PORTAL_PLACEHOLDER, server.url.rstrip("/"))
                   .replace(TEAM_PLACEHOLDER, "acme").replace(TOKEN_PLACEHOLDER, raw))
        status, answer = _run(command, shell="sh")
    assert status == 200, answer
    assert answer["ok"] is True and answer["output"] == {"totals": [{"month": "Jan",
                                                                     "total": 5}]}
