"""Replies cut at the cap over the OpenAI wire are never handed on as complete (docs/engine.md,
"The reply protocol for files"; docs/llm.md, "Reply caps").

The model is tests/llm/roleserver.py: a loopback OpenAI-compatible server that streams each
role's replies and stops some with `finish_reason: "length"` (the stand-in for a hosted model,
which this machine cannot reach). Everything else is real: RunLLM, the services, the sandbox,
the database, the pages.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from autocoder.engine.prompting import CUT_NOTE
from autocoder.engine.reply_formats import CONTINUE_ASK
from autocoder.llm.config import ROLE_MAX_TOKENS
from runs.models import Run
from runs.selectors import results
from runs.services import deciding, driving
from tests.engine.conftest import iterations, load_script
from tests.llm.roleserver import RoleServer, Said

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

SCRIPT = load_script("success")
PLAN = ("Approach: one method greet in greeter/plugin.py that checks the name is a non-empty "
        "string and formats 'Hello, <name>!' from it.")
CODE = SCRIPT["implementer"][0]
AT = CODE.index("    def greet(")  # the implementer's reply stops inside the file
TESTS = json.dumps({"files": [{"path": "tests/test_generated_edge_cases.py",
                               "content": SCRIPT["tester"][0].split("\n", 1)[1]
                               .rsplit("```", 1)[0]}], "reason": "edge cases"})


@pytest.fixture
def serve(settings: Any, engine_settings: Any) -> Iterator[Callable[..., RoleServer]]:
    servers: list[RoleServer] = []

    def start(replies: dict[str, list[Said]]) -> RoleServer:
        server = RoleServer(replies).start()
        servers.append(server)
        settings.LLM_PROVIDER, settings.LLM_BASE_URL = "openai", server.url
        settings.LLM_MODEL, settings.LLM_API_KEY = "stub", ""
        settings.LLM_MAX_TOKENS, settings.LLM_ROLE_OVERRIDES = 0, {}
        settings.LLM_TIMEOUT_S, settings.LLM_MAX_RETRIES = 10.0, 0
        settings.LLM_SYSTEM_MESSAGES = "keep"
        return server

    yield start
    for server in servers:
        server.stop()


def page(client: Client, name: str, pk: int, **params: Any) -> str:
    return client.get(reverse(name, args=[pk]), params).content.decode()


def test_a_plan_and_a_file_cut_at_the_cap_are_continued_and_used_whole(
        serve: Callable[..., RoleServer], start_run: Callable[..., Run],
        people: dict[str, Any]) -> None:
    cut = PLAN.index("formats") + 3  # "... and for" | "mats 'Hello, ...'"
    server = serve({
        "architect": [Said(PLAN[:cut], "length"), Said(PLAN[cut:])],
        "implementer": [Said(CODE[:AT], "length"), Said(CODE[AT:])],
        # A JSON reply cannot be continued in a new message: it is asked again, with room.
        "tester": [Said(TESTS[:60], "length"), Said(TESTS)],
        "reviewer": [Said("VERDICT: approve\nThe greeting matches the examples.")],
    })
    run = driving.run_drive(run_id=start_run(None, provider="openai").id)

    assert run.status == Run.Status.SUCCEEDED, run.error
    assert run.plan == PLAN  # whole: no note of a cut
    (only,) = iterations(run)
    assert "return {\"message\": f\"Hello, {name}!\"}" in only.files["greeter/plugin.py"]
    assert only.rejected_paths == []
    architect = server.asked("architect")
    assert len(architect) == 2
    assert architect[1]["messages"][-2:] == [
        {"role": "assistant", "content": PLAN[:cut]}, {"role": "user", "content": CONTINUE_ASK}]
    assert "response_format" not in architect[1]  # continued as text
    implementer = server.asked("implementer")
    assert implementer[1]["messages"][-2]["content"] == CODE[:AT]
    tester = server.asked("tester")
    assert [body["max_tokens"] for body in tester] == [ROLE_MAX_TOKENS["tester"],
                                                       2 * ROLE_MAX_TOKENS["tester"]]
    assert tester[1]["messages"] == tester[0]["messages"]
    calls = run.llm_calls.filter(error="").order_by("id")
    assert [(c.role, c.purpose, c.finish_reason) for c in calls if c.role != "reviewer"] == [
        ("architect", "", "length"), ("architect", "continue", "stop"),
        ("implementer", "", "length"), ("implementer", "continue", "stop"),
        ("tester", "", "length"), ("tester", "longer", "stop")]

    client = Client()
    client.force_login(people["requester"])
    shown = page(client, "run_detail", run.pk, iteration=1)
    assert "The architect&#x27;s reply stopped at its length limit; it was asked to continue " \
           "once and is whole now." in shown
    assert "The implementer&#x27;s reply stopped at its length limit; it was asked to " \
           "continue once and is whole now." in shown
    assert "The tester&#x27;s reply stopped at its length limit; it was asked again with " \
           "more room once and is whole now." in shown


def test_a_plan_still_cut_says_so_at_the_gate_and_on_the_run_page(
        serve: Callable[..., RoleServer], start_run: Callable[..., Run],
        people: dict[str, Any]) -> None:
    serve({
        "architect": [Said("1. Read the name; 2. check it is a", "length"),
                      Said(" non-empty string; 3. format", "length"),
                      Said(" the greeting from", "length")],
        "implementer": [Said(CODE)],
        "tester": [Said(SCRIPT["tester"][0])],
        "reviewer": [Said("VERDICT: approve\nFine.")],
    })
    run = driving.run_drive(run_id=start_run(None, provider="openai", autonomy="semi").id)

    gate = results.pending_approval(run)
    assert gate is not None and gate.kind == "plan" and gate.payload["plan_cut"] is True
    cut_plan = "1. Read the name; 2. check it is a non-empty string; 3. format the greeting from"
    assert gate.payload["plan"] == cut_plan + CUT_NOTE
    client = Client()
    client.force_login(people["reviewer"])
    assert "This plan is incomplete:" in page(client, "approval_detail", gate.pk)

    deciding.approval_decide(approval=gate, user=people["reviewer"], decision="approve",
                             dispatch=None)
    run = driving.run_drive(run_id=run.id)
    assert run.iterations.count() == 1
    # The implementer was told the plan's end is missing.
    implementer = run.llm_calls.filter(role="implementer").first()
    assert implementer is not None and CUT_NOTE.strip() in implementer.messages[-1]["content"]
    shown = page(client, "run_detail", run.pk, iteration=1)
    assert ("The architect&#x27;s reply stopped at its length limit; it was asked to continue "
            "2 times and is still cut: its end is missing") in shown
