"""Issue 27, end to end on a user's install: a plugin that posts a summary to the team's chat.

A requester's spec says the plugin talks to a chat webhook (`services`: its host, a plain
`channel` setting and a secret `token`). The generation loop writes the plugin, its
acceptance tests pass in the real sandbox through the plugins' test harness (a recording
`api.http` answering from the spec's examples), a reviewer approves the plan and the publish
request on the review page, a team admin activates it with the team's token
(`manage.py tool_activate`), adds a schedule on the tool's page, and the scheduler's sweep
sends it to a real Dramatiq worker when it is due. The "chat webhook" is a loopback HTTP
server of this test (TOOLS_INTERNAL_HOSTS lets the gate reach 127.0.0.1, as an install
declares an internal service); it receives the post with the token, and the token is
nowhere else: not on any page, in /metrics, the logs, the database, or the sandbox.

Everything is the production code on the session's PostgreSQL and Redis, the sandbox (the
journey runs on bubblewrap, and again on Docker with runc: tests/sandbox/backends.py) and an
in-process Dramatiq worker. The one stand-in is the model: the scripted
provider (docs/llm.md) replies as a model would.

The sandbox is looked at from inside by a second plugin, `sandbox-probe`, that declares the
same host and secret and reports its environment and every file it can read. The safety gate
rightly refuses such code in a generated or uploaded plugin (`os.environ`, paths outside the
workdir), so the probe is stored as a published version directly (tests/tools/conftest.py's
`publish_version`) and runs exactly as any activated tool's scheduled call does.
"""

from __future__ import annotations

import io
import json
import logging
import re
import secrets
import threading
from collections.abc import Callable, Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import dramatiq
import pytest
from django.apps import apps
from django.core.management import call_command
from django.test import Client, override_settings
from django.urls import reverse
from django.utils import timezone

from autocoder.runtime import runtime_dir
from marketplace.models import Plugin, PluginVersion
from runs.models import Run
from runs.selectors import results as selectors
from runs.services import outbox
from teams.models import AuditEntry
from tests.engine.conftest import engine_settings, people, start_run  # noqa: F401 (fixtures)
from tests.factories import MembershipFactory, UserFactory
from tests.sandbox.backends import use_backend
from tests.tools.conftest import publish_version
from tests.tools.journeys import client_for, decide_on_the_review_page, settled, wait_for
from tools.models import Invocation, Schedule
from tools.services.schedule_runs import schedules_due_send

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

TOKEN = "xoxb-" + secrets.token_hex(16)  # unique to this test session
SUMMARY = "Volunteer hours last week: 42"
CHANNEL = "#volunteers"
HOOK_PATH = "/services/T1/B2"


# -- the chat webhook ----------------------------------------------------------------------------


class ChatService:
    """The stand-in chat webhook on 127.0.0.1: it keeps every request it receives."""

    def __init__(self) -> None:
        self.received: list[dict[str, Any]] = []
        service = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                service.received.append({"method": "POST", "path": self.path,
                                         "headers": dict(self.headers.items()),
                                         "body": body.decode()})
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"


@pytest.fixture
def chat() -> Iterator[ChatService]:
    service = ChatService()
    thread = threading.Thread(target=service.server.serve_forever, daemon=True)
    thread.start()
    yield service
    service.server.shutdown()
    service.server.server_close()


# -- what the requester asks for, and what the scripted model answers ----------------------------


def chat_spec(chat: ChatService) -> dict[str, Any]:
    return {
        "name": "chat-summary",
        "summary": "Posts a summary to the team's chat channel.",
        "commands": [{
            "name": "post-summary",
            "description": "Input {summary}; posts it to the team's channel; output"
                           " {posted: true}.",
            "examples": [{
                "input": {"summary": SUMMARY}, "output": {"posted": True},
                "settings": {"channel": CHANNEL},
                "http": [{"method": "POST", "url": chat.url + HOOK_PATH, "status": 200,
                          "text": "ok"}],
            }],
        }],
        "services": {
            "hosts": [chat.url],
            "settings": [{"name": "channel", "description": "The channel to post in"},
                         {"name": "token", "description": "The chat's API token",
                          "secret": True}],
        },
        "constraints": ["standard library only"],
        "autonomy": "semi",
        "quality_threshold": 0.85,
        "max_iterations": 3,
    }


PLUGIN_PY = '''"""The chat-summary plugin: posts a summary to the team's chat channel."""

from __future__ import annotations

from typing import Any

WEBHOOK = "{url}"


class Plugin:
    """Posts a summary to the team's chat channel."""

    def on_initialize(self, api: Any) -> None:
        """Keeps the host's api: its settings and its http client."""
        self.api = api

    def on_event(self, event: str, data: dict) -> None:
        """Events are not used."""

    def on_command(self, name: str, payload: dict) -> dict:
        if name != "post-summary":
            raise ValueError(f"unknown command: {{name!r}}")
        return self.post_summary(payload)

    def post_summary(self, payload: dict) -> dict:
        summary = payload.get("summary")
        if not isinstance(summary, str) or not summary.strip():
            raise ValueError("summary must be a non-empty text")
        answer = self.api.http.post(
            WEBHOOK, json={{"text": summary, "channel": self.api.settings["channel"]}},
            auth=self.api.secret("token"))
        if answer.status != 200:
            raise ValueError(f"the chat answered {{answer.status}}")
        return {{"posted": True}}
'''

EDGE_TESTS = '''import pytest

from chat_summary.plugin import Plugin


def test_the_token_goes_as_the_authorization_and_the_channel_in_the_body(plugin_api):
    plugin_api.configure(settings={{"channel": "#general"}})
    plugin_api.http.reply("POST", "{url}", text="ok")
    plugin = Plugin()
    plugin.on_initialize(plugin_api)
    assert plugin.on_command("post-summary", {{"summary": "hi"}}) == {{"posted": True}}
    [sent] = plugin_api.http.requests
    assert sent.json == {{"text": "hi", "channel": "#general"}}
    assert sent.auth == {{"secret": "token"}}


def test_an_empty_summary_is_refused(plugin_api):
    plugin = Plugin()
    plugin.on_initialize(plugin_api)
    with pytest.raises(ValueError):
        plugin.on_command("post-summary", {{"summary": " "}})
'''


def model_script(chat: ChatService) -> dict[str, list[str]]:
    hook = chat.url + HOOK_PATH
    return {
        "architect": ["Approach: post_summary in chat_summary/plugin.py posts {text, channel}"
                      " to the webhook through api.http with auth=api.secret('token')."],
        "implementer": ["Here is the plugin.\n\n```python path=chat_summary/plugin.py\n"
                        + PLUGIN_PY.format(url=hook) + "```\n"],
        "tester": ["```python path=tests/test_generated_edge_cases.py\n"
                   + EDGE_TESTS.format(url=hook) + "```\n"],
    }


# -- the probe of the sandbox --------------------------------------------------------------------

PROBE_TOML = '''[plugin]
name = "sandbox-probe"
version = "{version}"
summary = "Reports what a call's sandbox holds."
entry = "month_totals.plugin:Plugin"

[permissions]
network = false
filesystem = "none"
hosts = ["%s"]

[[settings]]
name = "channel"
description = "The channel to post in"

[[settings]]
name = "token"
description = "The chat's API token"
secret = true

[[commands]]
name = "inspect"
description = "Reports its environment and every file it can read."
'''

PROBE_PY = '''"""Reports what a call's sandbox holds: its environment, every file it can read."""

import os
from pathlib import Path

# The plugin runtime is read for the token like every other file, but not listed: thousands of
# files, which under a checkout in /tmp would make the answer too big to hand back.
RUNTIME = "@RUNTIME@/"


def _read(path, found, hits):
    try:
        text = path.read_bytes().decode("utf-8", "replace")
    except OSError:
        return
    if not str(path).startswith(RUNTIME):
        found[str(path)] = len(text)
    start = text.find("xoxb-")
    while start != -1:
        hits.append([str(path), text[start:start + 40]])
        start = text.find("xoxb-", start + 1)


class Plugin:
    def on_initialize(self, api):
        self.api = api

    def on_command(self, name, payload):
        found, hits = {}, []
        for root in (Path.cwd(), Path("/tmp")):
            for folder, _dirs, names in os.walk(root):
                for file_name in names:
                    _read(Path(folder) / file_name, found, hits)
        for special in ("/proc/self/environ", "/proc/self/cmdline"):
            _read(Path(special), found, hits)
        environ = dict(os.environ)
        hits += [["environ", f"{k}={v}"] for k, v in environ.items() if "xoxb-" in k + v]
        return {"cwd": os.getcwd(), "environ": environ, "files": found, "hits": hits,
                "settings": dict(self.api.settings), "token_named": "token" in self.api.settings}
'''


# -- helpers -------------------------------------------------------------------------------------


def finished(invocation_of: Callable[[], Invocation | None]) -> Invocation:
    def check() -> Invocation | None:
        found = invocation_of()
        return found if found and found.status not in ("pending", "running") else None

    return wait_for(check, "the scheduled call did not finish on the worker")


def every_row_as_text() -> str:
    """Every row of every table of the portal, as text (sealed values stay sealed)."""
    return "\n".join(json.dumps(list(model._base_manager.values()), default=str)
                     for model in apps.get_models())


# -- the journey ---------------------------------------------------------------------------------


# Docker (runc) too, not runsc: one full journey per backend keeps CI's time (docs/sandbox.md).
@pytest.mark.parametrize("backend", ["bwrap", "docker"])
def test_a_generated_plugin_posts_on_a_schedule_with_the_teams_token_that_no_one_else_sees(
        start_run: Callable[..., Run], people: dict[str, Any],  # noqa: F811 (the fixtures)
        chat: ChatService, backend: str,
        worker: dramatiq.Worker, settings: Any, caplog: pytest.LogCaptureFixture,
        monkeypatch: pytest.MonkeyPatch) -> None:
    ran_on = use_backend(backend, settings)
    caplog.set_level(logging.DEBUG)
    settings.TOOLS_INTERNAL_HOSTS = frozenset({"127.0.0.1"})
    settings.ENGINE_SANDBOX_TIMEOUT_S = 120
    team, reviewer, requester = people["team"], people["reviewer"], people["requester"]
    admin = UserFactory(username="chat-admin")
    MembershipFactory(team=team, user=admin, role="admin")
    pages: dict[str, str] = {}

    # 1. The requester's spec goes to the generation loop on the worker; a reviewer approves
    #    the plan, the plugin passes its tests in the sandbox, the reviewer publishes it.
    run = start_run(model_script(chat), autonomy="semi", spec=chat_spec(chat),
                    dispatch=outbox.enqueue_step)
    waiting = settled(run.id)
    plan = selectors.pending_approval(waiting)
    assert plan is not None and plan.kind == "plan", waiting.error
    pages["plan"] = decide_on_the_review_page(plan, reviewer)
    plan_words = " ".join(re.sub(r"<[^>]+>", " ", pages["plan"]).split())
    assert chat.url in plan_words and "token" in plan_words, plan_words[-3000:]

    done = settled(run.id)
    assert done.status == Run.Status.SUCCEEDED, done.error
    best = done.best_iteration
    assert best is not None and best.succeeded, best and best.failures
    outcomes = {o["nodeid"]: o["outcome"] for o in best.test_report["outcomes"]}
    assert outcomes == {
        "tests/test_acceptance.py::test_post_summary_example_1": "passed",
        "tests/test_generated_edge_cases.py::"
        "test_the_token_goes_as_the_authorization_and_the_channel_in_the_body": "passed",
        "tests/test_generated_edge_cases.py::test_an_empty_summary_is_refused": "passed",
    }
    assert best.test_report["backend"] == ran_on
    assert chat.received == [], "the tests in the sandbox reach no network"
    publish = selectors.pending_approval(done)
    assert publish is not None and publish.kind == "publish"
    pages["publish"] = decide_on_the_review_page(publish, reviewer)
    version = PluginVersion.objects.get(plugin__normalized_name="chat-summary")
    assert version.status == PluginVersion.Status.PUBLISHED
    assert f'hosts = ["{chat.url}"]' in version.files["plugin.toml"]
    assert 'name = "token"' in version.files["plugin.toml"]

    # 2. A team admin activates it with the team's token (read from the environment, never
    #    typed on a command line), and the probe of the sandbox with the same settings.
    monkeypatch.setenv("CHAT_TOKEN", TOKEN)
    printed = io.StringIO()
    call_command("tool_activate", team.slug, "chat-summary", version.version, "--as",
                 admin.username, "--setting", f"channel={CHANNEL}", "--secret",
                 "token=CHAT_TOKEN", stdout=printed)
    probe = publish_version(team, name="sandbox-probe",
                            body=PROBE_PY.replace("@RUNTIME@", str(runtime_dir())),
                            toml=PROBE_TOML % chat.url)
    call_command("tool_activate", team.slug, "sandbox-probe", probe.version, "--as",
                 admin.username, "--setting", f"channel={CHANNEL}", "--secret",
                 "token=CHAT_TOKEN", stdout=printed)

    # 3. The admin adds schedules on the tools' pages; when they are due, the scheduler's
    #    sweep sends them to the worker.
    owner = client_for(admin)
    for name, command, payload in (("chat-summary", "post-summary", {"summary": SUMMARY}),
                                   ("sandbox-probe", "inspect", {})):
        answer = owner.post(reverse("tools:schedules", args=[team.slug, name]),
                            {"name": f"Weekly {name}", "command": command,
                             "payload": json.dumps(payload), "every": "hours",
                             "interval": "1"})
        assert answer.status_code == 302
    schedule = Schedule.objects.get(plugin__normalized_name="chat-summary")
    probing = Schedule.objects.get(plugin__normalized_name="sandbox-probe")
    assert not Invocation.objects.filter(schedule__isnull=False).exists()  # none due yet
    now = timezone.now()
    Schedule.objects.update(next_run_at=now - timedelta(seconds=1))
    # The worker's heartbeat runs the same sweep every few seconds, so either sweep may claim
    # a due schedule first (a guarded update): the event waited for is each schedule's run
    # recorded, by whichever sweeper, not this call's own claim.
    ours = schedules_due_send(now=now)
    assert set(ours) <= {schedule.pk, probing.pk} and len(ours) == len(set(ours)), ours
    call = finished(lambda: Invocation.objects.filter(schedule=schedule).first())
    looked = finished(lambda: Invocation.objects.filter(schedule=probing).first())
    for due in (schedule, probing):  # each started once, and moved on to its next run
        assert list(Invocation.objects.filter(schedule=due).values_list("caller", flat=True)) \
            == [Invocation.Caller.SCHEDULE], due.name
        due.refresh_from_db()
        assert due.next_run_at > now and due.last_run_at is not None, due.name

    # 4. The chat received one post with the token; the call is recorded without it.
    assert call.status == Invocation.Status.OK, call.error
    assert call.caller == Invocation.Caller.SCHEDULE
    assert call.output == {"posted": True}
    [received] = chat.received
    assert received["path"] == HOOK_PATH
    assert received["headers"]["Authorization"] == f"Bearer {TOKEN}"
    assert json.loads(received["body"]) == {"text": SUMMARY, "channel": CHANNEL}
    [request] = call.http_requests
    assert (request["method"], request["host"], request["path"], request["status"]) == (
        "POST", "127.0.0.1", HOOK_PATH, 200)

    # The sandbox: no token in its environment or in any file it can read, not even blanked
    # (the host blanks a secret out of what a plugin hands back, so "[secret]" would be a leak
    # too). The probe's own source holds the text it looks for: it does find what is there.
    assert looked.status == Invocation.Status.OK, looked.error
    seen: dict[str, Any] = looked.output or {}
    assert seen["settings"] == {"channel": CHANNEL} and seen["token_named"] is True
    assert f"{seen['cwd']}/plugin.toml" in seen["files"] and "/proc/self/environ" in seen["files"]
    assert seen["hits"], "the probe finds the text in its own source"
    assert all(path.startswith(f"{seen['cwd']}/month_totals/") for path, _ in seen["hits"]), (
        seen["hits"])
    assert TOKEN not in json.dumps(seen) and "[secret]" not in json.dumps(seen)
    assert "CHAT_TOKEN" not in seen["environ"]

    # 5. The token is nowhere else: the pages of the tool, its log and result, the project's
    #    run and review pages, the marketplace, the audit log, /metrics, what the commands
    #    printed, the logs of the whole journey, and every row of the database.
    member = client_for(requester)
    for who, name, args in (
            (admin, "tools:detail", [team.slug, "chat-summary"]),
            (admin, "tools:log", [team.slug, "chat-summary"]),
            (admin, "tools:result", [team.slug, "chat-summary", call.pk]),
            (admin, "tools:settings", [team.slug, "chat-summary"]),
            (admin, "tools:result", [team.slug, "sandbox-probe", looked.pk]),
            (admin, "tools:list", [team.slug]),
            (requester, "run_detail", [run.pk]),
            (reviewer, "approval_detail", [plan.pk]),
            (reviewer, "approval_detail", [publish.pk]),
            (requester, "approval_list", []),
            (admin, "audit_log", [team.slug]),
            (requester, "marketplace:plugin", ["chat-summary"]),
            (requester, "marketplace:version", ["chat-summary", version.version])):
        page = (member if who is requester else client_for(who)).get(reverse(name, args=args))
        assert page.status_code == 200, (name, page.status_code)
        pages[f"{name} {args}"] = page.content.decode()
    assert "1 request to other services" in pages[
        f"tools:result {[team.slug, 'chat-summary', call.pk]}"]
    log = pages[f"tools:log {[team.slug, 'chat-summary']}"]
    assert "schedule “Weekly chat-summary”" in log and f"POST 127.0.0.1{HOOK_PATH}" in log
    assert "Weekly chat-summary" in pages[f"tools:detail {[team.slug, 'chat-summary']}"]
    with override_settings(METRICS_TOKEN="scrape-token"):
        metrics = Client().get("/metrics", HTTP_AUTHORIZATION="Bearer scrape-token")
    assert metrics.status_code == 200
    pages["/metrics"] = metrics.content.decode()
    pages["commands"] = printed.getvalue()
    for where, text in pages.items():
        assert TOKEN not in text, where
    assert AuditEntry.objects.filter(team=team, action__startswith="tool.").exists()
    assert TOKEN not in json.dumps(list(AuditEntry.objects.values()), default=str)
    assert TOKEN not in json.dumps(list(Invocation.objects.values()), default=str)
    assert TOKEN not in every_row_as_text()
    assert TOKEN not in caplog.text
    assert not [r for r in caplog.records if TOKEN in str(r.__dict__)]
    assert Plugin.objects.filter(normalized_name="chat-summary").get().latest_version == version
