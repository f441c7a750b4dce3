"""Issue 29, end to end on a user's install: a plugin gets better from use.

The team's greeter 1.0.0 (published with the command line's checks, activated by the team's
admin) capitalises names its own way: "McCarthy" comes back as "Mccarthy". The requester sees
it in a call made on the tool's page, asks for a change from that call with the answer they
expected, and a reviewer starts a change run from the request's page. The run starts from
1.0.0's code and tests, adds the case as a regression test (which fails on 1.0.0), fixes the
code, passes every test in the sandbox, and a reviewer approves it at the plan and publish
gates on the review pages: 1.0.1 is published. The asker is told it shipped, the team's admin
that an upgrade waits; the admin upgrades on the activation page (with its diff), and the same
input now gives the expected answer through the tools' HTTP API. The plugin's git history has
both versions, and `git clone` over HTTP works with the team's token and fails without it.

Everything is the production code on the session's PostgreSQL and Redis, the bubblewrap
sandbox, an in-process Dramatiq worker and a live daphne server for git. The one stand-in is
the model: the scripted provider (docs/llm.md), configured as an install would (LLM_SCRIPT).
"""

from __future__ import annotations

import html
import json
import os
import re
from pathlib import Path
from typing import Any

import dramatiq
import pytest
from django.test import Client
from django.urls import reverse

from marketplace.history import repo_path
from marketplace.models import PluginVersion
from marketplace.services.publishing import plugin_directory_publish
from marketplace.services.tokens import api_token_create
from runs.models import Run
from runs.selectors import results as selectors
from teams.models import Notification
from tests.engine.conftest import engine_settings, people  # noqa: F401 (fixtures)
from tests.factories import MembershipFactory, UserFactory
from tests.live import live_asgi_server
from tests.marketplace.test_history import git
from tests.runs.test_change_runs import FIXED, replying, version_1_0_0
from tests.tools.journeys import client_for, decide_on_the_review_page, settled, wait_for
from tools.models import Activation, ChangeRequest, Invocation
from tools.services.tokens import tool_token_create

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

WRONG = {"message": "Hello, Mccarthy!"}
EXPECTED = {"message": "Hello, McCarthy!"}


def words(page: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


def call_on_the_tools_page(client: Client, slug: str, name: str) -> Invocation:
    """A member greets McCarthy on the tool's page; the worker runs the call in the sandbox."""
    before = Invocation.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
    page = client.get(reverse("tools:detail", args=[slug, "greeter"])).content.decode()
    # The form asks for the name when the version's manifest says so, else the whole input.
    data = ({"greet-name": name} if 'name="greet-name"' in page
            else {"greet-input": json.dumps({"name": name})})
    assert 'name="greet-input"' in page or 'name="greet-name"' in page
    sent = client.post(reverse("tools:run", args=[slug, "greeter", "greet"]), data)
    assert sent.status_code == 302, words(sent.content.decode())[-2000:]

    def done() -> Invocation | None:
        found = Invocation.objects.filter(pk__gt=before).order_by("pk").first()
        return found if found and found.status not in ("pending", "running") else None

    return wait_for(done, "the call did not finish on the worker")


def test_a_wrong_answer_becomes_a_tested_fix_the_team_upgrades_to(
        people: dict[str, Any], engine_settings: Any,  # noqa: F811 (the fixtures)
        worker: dramatiq.Worker, settings: Any, tmp_path: Path) -> None:
    team, reviewer, requester = people["team"], people["reviewer"], people["requester"]
    admin: Any = UserFactory(username="greeter-admin")
    MembershipFactory(team=team, user=admin, role="admin")
    # The install's model is the scripted provider (recorded replies): the fix of the name.
    script = tmp_path / "script.json"
    script.write_text(json.dumps(replying(FIXED)))
    settings.LLM_PROVIDER, settings.LLM_SCRIPT = "scripted", str(script)
    settings.ENGINE_SANDBOX_TIMEOUT_S = 120
    # The live server (a subprocess) reads the git history from the session's var directory.
    settings.VAR_DIR = Path(os.environ["AUTOCODER_VAR_DIR"]).resolve()

    # 1. Version 1.0.0 is published with the command line's checks (its tests pass in the
    #    sandbox) and the team's admin activates it on the activation page.
    source = tmp_path / "greeter"
    for path, text in version_1_0_0().items():
        (source / path).parent.mkdir(parents=True, exist_ok=True)
        (source / path).write_text(text)
    first = plugin_directory_publish(directory=source, team=team, approver=admin,
                                     visibility="team")
    assert (first.version, first.status) == ("1.0.0", PluginVersion.Status.PUBLISHED)
    owner = client_for(admin)
    activated = owner.post(reverse("tools:activate", args=[team.slug, "greeter", "1.0.0"]),
                           {"decision": "approve", "comment": ""})
    assert activated.status_code == 302
    assert Activation.objects.get(team=team, status="active").version == first

    # 2. The requester greets McCarthy on the tool's page: a wrong answer.
    asker = client_for(requester)
    call = call_on_the_tools_page(asker, team.slug, "McCarthy")
    assert call.status == Invocation.Status.OK, call.error
    assert call.output == WRONG

    # 3. "Ask for a change" from that call, in the log, with what they expected.
    log = asker.get(reverse("tools:log", args=[team.slug, "greeter"])).content.decode()
    ask = reverse("tools:change_ask", args=["greeter"])
    assert f"{ask}?team={team.slug}&amp;invocation={call.pk}" in log
    form = asker.get(f"{ask}?team={team.slug}&invocation={call.pk}")
    assert form.status_code == 200 and "Mccarthy" in words(form.content.decode())
    sent = asker.post(ask, {
        "team": team.slug, "invocation": str(call.pk), "version": "1.0.0",
        "description": "Names like McCarthy lose their capitals.",
        "keep": "The greeting stays 'Hello, <name>!'.",
        "input": json.dumps({"name": "McCarthy"}), "expected": json.dumps(EXPECTED)})
    assert sent.status_code == 302, words(sent.content.decode())[-3000:]
    asked = ChangeRequest.objects.get()
    assert asked.cases[0]["got"] == WRONG and asked.cases[0]["expected"] == EXPECTED

    # 4. A reviewer of the team starts the change run from the request's page.
    request_page = reverse("tools:change", args=[asked.pk])
    judge = client_for(reviewer)
    assert "Start a change run" in words(judge.get(request_page).content.decode())
    started = judge.post(request_page, {"decision": "start"})
    assert started.status_code == 302, words(started.content.decode())[-3000:]
    asked.refresh_from_db()
    assert asked.status == ChangeRequest.Status.STARTED and asked.project is not None
    run = asked.project.runs.get()
    assert run.base_version == "1.0.0"
    assert asked.project.name == "greeter: Names like McCarthy lose their capitals"

    # 5. The change run: the regression test fails on 1.0.0, the plan is approved on the
    #    review page, the fix passes every test, and the publish request is approved.
    waiting = settled(run.id)
    plan = selectors.pending_approval(waiting)
    assert plan is not None and plan.kind == "plan", (waiting.status, waiting.error)
    assert waiting.base_note == "The new test fails on version 1.0.0, as expected."
    decide_on_the_review_page(plan, reviewer)

    done = settled(run.id)
    assert done.status == Run.Status.SUCCEEDED, done.error
    best = done.best_iteration
    assert best is not None and best.succeeded, best and best.failures
    outcomes = {o["nodeid"]: o["outcome"] for o in best.test_report["outcomes"]}
    assert outcomes["tests/test_regression_1.py::test_greet_example_1"] == "passed"
    assert outcomes["tests/test_generated_names.py::test_ada_is_greeted"] == "passed"
    assert set(outcomes.values()) == {"passed"}, outcomes
    assert "McCarthy" in best.files["tests/test_regression_1.py"]
    publish = selectors.pending_approval(done)
    assert publish is not None and publish.kind == "publish"
    assert publish.payload["change"]["version"] == "1.0.1"
    decide_on_the_review_page(publish, reviewer)
    second = wait_for(lambda: PluginVersion.objects.filter(
        plugin=first.plugin, version="1.0.1", status=PluginVersion.Status.PUBLISHED).first(),
        "1.0.1 was not published")
    assert 'version = "1.0.1"' in second.files["plugin.toml"]
    assert "tests/test_regression_1.py" in second.files

    # 6. The asker is told it shipped; the admin that an upgrade waits. Nothing changed yet.
    shipped = wait_for(lambda: Notification.objects.filter(
        user=requester, message__contains="is out").first(), "the asker was not told")
    assert ChangeRequest.objects.get(pk=asked.pk).status == ChangeRequest.Status.SHIPPED
    told = words(asker.get(shipped.url).content.decode())
    assert "The change is out" in told and "version 1.0.1 of greeter is published" in told
    assert f"The team {team.name} still uses version 1.0.0: a team admin upgrades it" in told
    upgrade = wait_for(lambda: Notification.objects.filter(
        user=admin, message__startswith="Upgrade waiting").first(), "the admin was not told")
    assert "greeter 1.0.1 is out (your team uses 1.0.0)" in upgrade.message
    assert Activation.objects.get(team=team, status="active").version == first

    # 7. The admin upgrades from the notice: the activation page shows what changes.
    page = words(owner.get(upgrade.url).content.decode())
    assert "Upgrade greeter 1.0.1" in page and "What changes from version 1.0.0" in page
    assert "name.title()" in page and "test_regression_1.py" in page
    upgraded = owner.post(upgrade.url, {"decision": "approve", "comment": "The fix."})
    assert upgraded.status_code == 302
    assert Activation.objects.get(team=team, status="active").version == second
    told = words(asker.get(shipped.url).content.decode())
    assert f"The team {team.name} uses version 1.0.1 now: the change is in use." in told
    assert "upgrades it" not in told

    # 8. The same input through the tools' HTTP API now gives the expected answer.
    _, raw = tool_token_create(team=team, plugin=first.plugin, user=admin, name="intranet")
    answer = Client().post(reverse("tools:api", args=[team.slug, "greeter", "greet"]),
                           json.dumps({"name": "McCarthy"}), content_type="application/json",
                           headers={"Authorization": f"Bearer {raw}"})
    assert answer.status_code == 200, answer.content.decode()
    assert answer.json()["output"] == EXPECTED

    # 9. The history has both versions; a clone over HTTP needs the team's token.
    repo = str(wait_for(lambda: repo_path(first.plugin_id).exists() and repo_path(
        first.plugin_id), "no history"))
    tags = wait_for(lambda: (found := git("--git-dir", repo, "tag", "--list").stdout.split())
                    == ["v1.0.0", "v1.0.1"] and found, "the history lacks a version")
    assert tags == ["v1.0.0", "v1.0.1"]
    _, token = api_token_create(user=requester, name="git")
    with live_asgi_server() as server:
        host = server.url.removeprefix("http://")
        url = "marketplace/p/greeter/git/"
        refused = git("clone", "--quiet", f"{server.url}{url}", str(tmp_path / "no"),
                      check=False)
        assert refused.returncode != 0 and not (tmp_path / "no" / "plugin.toml").exists()
        git("clone", "--quiet", f"http://__token__:{token}@{host}{url}", str(tmp_path / "ours"))
    cloned = tmp_path / "ours"
    assert git("tag", "--list", cwd=cloned).stdout.split() == ["v1.0.0", "v1.0.1"]
    assert (cloned / "greeter" / "plugin.py").read_text() == FIXED
    assert (cloned / "tests" / "test_regression_1.py").exists()
    commits = git("log", "--format=%an|%s", cwd=cloned).stdout.splitlines()
    assert len(commits) == 2 and commits[0].startswith(f"{requester.username}|"), commits
