"""The short follow-up interview of a change request (issue 29): once a request is made, a
worker asks the owning team's analyst model whether it is clear enough to change the plugin.
An unclear one gets at most three questions, each with what is assumed if it is not
answered; the asker answers them on the request's page (each optional), and the change spec
("What to change", "What must stay as it is") is written from the answers; a clear one gets
its spec at once. The reviewer sees the spec, and the change run is told it. A model that is
not set up or does not answer leaves the request as written, and the page says so with the fix.

Real PostgreSQL, Redis and an in-process Dramatiq worker; the model is the scripted provider,
configured as an install would (LLM_SCRIPT), or a closed port for a model that does not answer.
"""

from __future__ import annotations

import html
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import dramatiq
import pytest
from django.urls import reverse
from django.utils import timezone

from autocoder.engine.prompting import request_section
from autocoder.engine.spec import spec_from_dict
from runs.models import LLMCall, Project
from teams.models import Notification
from tests.factories import MembershipFactory, UserFactory
from tests.tools.journeys import client_for, wait_for
from tools.models import Activation, ChangeRequest
from tools.services.change_questions import (
    MAX_PROMPT_CHARS,
    follow_up_messages,
    follow_up_parse,
)

pytestmark = pytest.mark.django_db(transaction=True)

QUESTIONS = {
    "questions": [
        {"question": "Should each total be rounded to cents?",
         "assumption": "Round to two decimals."},
        {"question": "Which currency are the amounts in?", "assumption": "Euros."},
    ],
    "change": "Round each month's total to two decimals.",
    "keep": "The order of the months.",
}
SPEC = {"questions": [], "change": "Round each month's total to cents (two decimals), in euros.",
        "keep": "The order of the months and their names."}
EXPECTED = '{"totals": [{"month": "Jan", "total": 0.3}]}'


@pytest.fixture
def script(tmp_path: Path, settings: Any) -> Path:
    """The installation's model: the scripted provider reading LLM_SCRIPT (each call reads
    the file, so a test writes the reply the model gives next)."""
    path = tmp_path / "script.json"
    settings.LLM_PROVIDER, settings.LLM_SCRIPT = "scripted", str(path)
    settings.LLM_MODEL = settings.LLM_BASE_URL = settings.LLM_API_KEY = ""
    settings.LLM_ROLE_OVERRIDES = {}
    return path


def model_replies(path: Path, reply: str | dict[str, Any]) -> None:
    text = reply if isinstance(reply, str) else json.dumps(reply)
    path.write_text(json.dumps({"analyst": [text]}))


def ask(client: Any, description: str = "The totals are too long.") -> ChangeRequest:
    sent = client.post(reverse("tools:change_ask", args=["month-totals"]), {
        "team": "acme", "description": description, "keep": "The months' order.",
        "command": "totals", "input": '{"rows": [{"month": "Jan", "amount": 0.1}, '
                                      '{"month": "Jan", "amount": 0.2}]}',
        "got": '{"totals": [{"month": "Jan", "total": 0.30000000000000004}]}',
        "expected": EXPECTED})
    assert sent.status_code == 302, sent.content.decode()[:3000]
    return ChangeRequest.objects.latest("pk")


def read(asked: ChangeRequest) -> ChangeRequest:
    """The request once the worker has the analyst's reply."""
    def done() -> ChangeRequest | None:
        asked.refresh_from_db()
        return asked if asked.follow_up not in ("reading", "writing") else None

    return wait_for(done, "the analyst's reply was not stored", timeout_s=20)


def page(client: Any, asked: ChangeRequest) -> str:
    response = client.get(reverse("tools:change", args=[asked.pk]))
    assert response.status_code == 200
    return html.unescape(response.content.decode())


def told(asked: ChangeRequest) -> str:
    """What the change run's model reads of the request."""
    project = Project.objects.get(pk=asked.project_id)
    return request_section(spec_from_dict(project.spec))


def test_an_unclear_request_gets_questions_and_the_answers_make_the_change_spec(
        active: Activation, world: dict[str, Any], worker: dramatiq.Worker,
        script: Path) -> None:
    model_replies(script, "Here you are:\n```json\n" + json.dumps(QUESTIONS) + "\n```")
    asker = client_for(world["requester"])
    asked = read(ask(asker))
    assert asked.follow_up == "asked" and len(asked.questions) == 2

    # The analyst read the plugin's commands and inputs, the request and its example.
    [call] = LLMCall.objects.filter(role="analyst")
    prompt = call.messages[1]["content"]
    assert "Command totals: Adds up the amounts of each month." in prompt
    assert "input name (text): Who to greet" in prompt and "times (number, optional)" in prompt
    assert "The totals are too long." in prompt and "The months' order." in prompt
    assert '"amount": 0.1' in prompt and "0.30000000000000004" in prompt

    # The asker is told, and answers on the request's page: each answer is optional.
    note = Notification.objects.get(user=world["requester"], kind="comment")
    assert note.url == reverse("tools:change", args=[asked.pk]) + "#questions"
    assert "2 questions" in note.message
    shown = page(asker, asked)
    assert "1. Should each total be rounded to cents?" in shown
    assert "If you leave it blank: Euros." in shown and "Send answers" in shown
    assert 'for="answer-1"' in shown
    # The reviewer sees the questions and may start now: the assumptions are used then.
    reviewer = client_for(world["reviewer"])
    for_reviewer = page(reviewer, asked)
    assert "If you leave it blank: Round to two decimals." in for_reviewer
    assert "You may answer for acme-requester" in for_reviewer
    assert "if you start now, the change run uses their assumptions" in for_reviewer
    assert "Start a change run" in for_reviewer

    model_replies(script, SPEC)
    url = reverse("tools:change", args=[asked.pk])
    answered = asker.post(url, {"decision": "answer", "answer-0": "Yes, to cents.",
                                "answer-1": "  "})
    assert answered.status_code == 302
    asked = read(asked)
    assert asked.follow_up == "done" and asked.answered_by == world["requester"]
    second = LLMCall.objects.filter(role="analyst").latest("pk").messages[1]["content"]
    assert "Asked: Should each total be rounded to cents? Answer: Yes, to cents." in second
    assert "Answer: (not answered; assume: Euros.)" in second

    # The change spec is shown to the asker and to the reviewer who starts the run.
    for client in (asker, reviewer):
        shown = page(client, asked)
        assert "Change spec" in shown and "What to change" in shown
        assert SPEC["change"] in shown and SPEC["keep"] in shown
        assert "Answer</strong>: Yes, to cents." in shown
        assert "Not answered, so assumed: Euros." in shown
    # Settled questions are not answered twice.
    again = asker.post(url, {"decision": "answer", "answer-0": "No."})
    assert again.status_code == 400 and "settled already" in again.content.decode()

    worker.stop()  # what the change run then does is tests/tools/test_change_journey.py's
    started = reviewer.post(url, {"decision": "start"})
    assert started.status_code == 302, started.content.decode()[:3000]
    asked.refresh_from_db()
    instructions = told(asked)
    assert f"What to change: {SPEC['change']}" in instructions
    assert f"What must stay as it is: {SPEC['keep']}" in instructions
    assert "Asked for in these words: The totals are too long." in instructions
    assert "Answer: Yes, to cents." in instructions


def test_a_clear_request_gets_its_change_spec_without_questions(
        active: Activation, world: dict[str, Any], worker: dramatiq.Worker,
        script: Path) -> None:
    model_replies(script, SPEC)
    asker = client_for(world["requester"])
    asked = read(ask(asker))
    assert asked.follow_up == "done" and asked.questions == []
    shown = page(asker, asked)
    assert "The analyst found the request clear: no questions." in shown
    assert SPEC["change"] in shown and "Send answers" not in shown
    assert not Notification.objects.filter(user=world["requester"], kind="comment").exists()


def test_a_reply_that_cannot_be_read_leaves_the_request_as_written(
        active: Activation, world: dict[str, Any], worker: dramatiq.Worker,
        script: Path) -> None:
    model_replies(script, "I think this is fine, go ahead!")
    asker = client_for(world["requester"])
    asked = read(ask(asker, "Round the totals to cents."))
    assert asked.follow_up == "done" and asked.spec_change == ""
    shown = page(asker, asked)
    assert "no questions" in shown and "did not answer" not in shown
    assert "<h3>What to change</h3>\n  <p>Round the totals to cents.</p>" in shown


def test_no_model_is_said_plainly_and_the_request_can_still_start(
        active: Activation, world: dict[str, Any], worker: dramatiq.Worker,
        settings: Any) -> None:
    settings.LLM_PROVIDER = settings.LLM_SCRIPT = settings.LLM_MODEL = ""
    settings.LLM_BASE_URL = settings.LLM_API_KEY = ""
    settings.LLM_ROLE_OVERRIDES = {}
    asker = client_for(world["requester"])
    asked = read(ask(asker, "Round the totals to cents."))
    assert asked.follow_up == "no_model"
    shown = page(asker, asked)
    assert "no model is set up to read change requests" in shown
    assert "Nothing is wrong with the request; it goes on as written" in shown
    assert "a site administrator sets up a model on the Model page" in shown
    staff = UserFactory(is_staff=True)
    MembershipFactory(team=world["acme"], user=staff, role="reviewer")
    assert reverse("llm:model_settings") in page(client_for(staff), asked)

    reviewer = client_for(world["reviewer"])
    started = reviewer.post(reverse("tools:change", args=[asked.pk]), {"decision": "start"})
    assert started.status_code == 302, started.content.decode()[:3000]
    asked.refresh_from_db()
    assert asked.status == "started"
    assert "What to change: Round the totals to cents." in told(asked)

    # A worker that stopped mid-way leaves no one waiting: the page says it goes on as written.
    ChangeRequest.objects.filter(pk=asked.pk).update(
        follow_up="reading", created_at=timezone.now() - timedelta(hours=1))
    assert "has not replied for a while, so the request goes on as written" in page(asker, asked)


def test_a_model_that_does_not_answer_is_not_blamed_on_the_asker(
        active: Activation, world: dict[str, Any], worker: dramatiq.Worker,
        settings: Any, tmp_path: Path) -> None:
    settings.LLM_PROVIDER, settings.LLM_BASE_URL = "openai", "http://127.0.0.1:9/v1"
    settings.LLM_MODEL, settings.LLM_API_KEY, settings.LLM_SCRIPT = "stand-in", "", ""
    settings.LLM_ROLE_OVERRIDES = {}
    asked = read(ask(client_for(world["requester"])))
    assert asked.follow_up == "unreachable"
    shown = page(client_for(world["reviewer"]), asked)
    assert "No follow-up questions were asked: the model did not answer" in shown
    assert "checks the model with Test connection on the Model page" in shown
    assert "Start a change run" in shown

    # Once the model answers again, the asker (or a reviewer) asks the analyst again.
    path = tmp_path / "script.json"
    model_replies(path, QUESTIONS)
    settings.LLM_PROVIDER, settings.LLM_SCRIPT = "scripted", str(path)
    settings.LLM_MODEL = settings.LLM_BASE_URL = ""
    again = client_for(world["requester"]).post(reverse("tools:change", args=[asked.pk]),
                                                {"decision": "ask_again"})
    assert again.status_code == 302
    assert read(asked).follow_up == "asked" and len(asked.questions) == 2


def test_only_the_asker_and_the_owning_teams_reviewers_answer(
        active: Activation, world: dict[str, Any], worker: dramatiq.Worker,
        script: Path) -> None:
    model_replies(script, QUESTIONS)
    asked = read(ask(client_for(world["requester"])))
    assert asked.follow_up == "asked"
    url = reverse("tools:change", args=[asked.pk])
    answer = {"decision": "answer", "answer-0": "Yes."}
    # Another team: the request does not exist for them.
    outsider = client_for(world["other_admin"])
    assert outsider.get(url).status_code == 404
    assert outsider.post(url, answer).status_code == 404
    # A requester of the owning team who did not ask sees it, and may not answer.
    colleague = UserFactory(username="acme-colleague")
    MembershipFactory(team=world["acme"], user=colleague, role="requester")
    mine = client_for(colleague)
    shown = page(mine, asked)
    assert "Send answers" not in shown and "If no answer comes: Euros." in shown
    assert mine.post(url, answer).status_code == 403
    asked.refresh_from_db()
    assert asked.follow_up == "asked" and asked.answered_at is None
    # A reviewer of the owning team may answer for the asker.
    model_replies(script, SPEC)
    assert "Send answers" in page(client_for(world["reviewer"]), asked)
    assert client_for(world["reviewer"]).post(url, answer).status_code == 302
    assert read(asked).answered_by == world["reviewer"]


def test_replies_are_read_tolerantly_and_at_most_three_questions_are_kept() -> None:
    many = [{"question": f"Question {n}?", "assumption": f"Assume {n}."} for n in range(5)]
    assert len(follow_up_parse(json.dumps({"questions": many})).questions) == 3
    bare = follow_up_parse(json.dumps(many[:2]))
    assert [q["text"] for q in bare.questions] == ["Question 0?", "Question 1?"]
    cut = follow_up_parse('{"questions": [{"question": "Cents?", "assumption": "Yes."}, '
                          '{"question": "Curr')
    assert [(q["text"], q["assumption"]) for q in cut.questions] == [("Cents?", "Yes.")]
    no_assumption = follow_up_parse('{"questions": ["Cents?"], "change": "Round."}')
    assert no_assumption.questions[0]["assumption"] == "The request is read as written."
    assert no_assumption.change == "Round."
    for nonsense in ("", "no idea", "[1, 2", '{"questions": 3, "change": 4}'):
        reply = follow_up_parse(nonsense)
        assert (reply.questions, reply.change, reply.keep) == ([], "", "")


def test_long_requests_are_bounded_for_the_model(
        active: Activation, world: dict[str, Any]) -> None:
    huge = {"rows": [{"month": "Jan", "amount": n} for n in range(2000)]}
    request = ChangeRequest(team=world["acme"], plugin=active.plugin, version=active.version,
                            from_team=world["acme"], description="word " * 1000,
                            keep="stay " * 1000,
                            cases=[{"command": "totals", "input": huge, "got": huge,
                                    "failed": False}] * 20)
    request.questions = [{"text": "Cents?", "assumption": "Yes.", "answer": "yes " * 1000}]
    [system, user] = follow_up_messages(request, answered=True)
    assert len(user.content) <= MAX_PROMPT_CHARS + 20 and len(system.content) < 2000
    # What was asked and answered comes first: a bound cuts examples, never the answers.
    assert user.content.startswith("What should be different (their words): word word")
    assert "What must stay as it is (their words): stay" in user.content
    assert "Asked: Cents? Answer: yes yes" in user.content
    assert "Example 1: totals with" in user.content
    assert user.content.endswith("(cut here)")
