"""The wizard while the analyst thinks (issue 28, item 7): the probe's first Continue took
31.8 s with a local model behind a frozen form. With JavaScript (htmx) the post answers at once
with a "Thinking about your answers" page that follows the analyst over server-sent events: each
question as the model writes it, the seconds, then the next page. Without JavaScript the post
waits (within the bound) as before, and a model that gave up is said so in plain words.

The model is a loopback server (tests/llm/fakeserver.py) that streams like an OpenAI-compatible
one, or the scripted provider; nothing is mocked."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from projects.interview import navigation
from projects.models import Interview
from runs.models import LLMCall
from tests.llm.fakeserver import FakeServer, Reply

pytestmark = pytest.mark.django_db

REQUEST = "I need something that greets a person by name, politely."
QUESTIONS = [
    {"question": "Should the greeting be formal or casual?", "priority": "essential",
     "assumption": "Casual."},
    {"question": "Should it use emoji?", "priority": "nice", "assumption": "No emoji."},
]
CHECKLIST = [
    {"commands": "greet: say hello to someone"},
    {"cmd-c1-inputs": "name", "cmd-c1-outputs": "message"},
    {"ex-c1-0-in": "name: Ada", "ex-c1-0-out": "message: Hello, Ada!",
     "ex-c1-1-in": "name: Linus", "ex-c1-1-out": "message: Hello, Linus!",
     "ex-c1-2-in": "", "ex-c1-2-out": "", "cmd-c1-edge_cases": "Refuse an empty name."},
    {"autonomy": "full", "constraints": "Standard library only"},
]
HTMX = {"HTTP_HX_REQUEST": "true"}


def chunk(content: str | None = None, *, finish: str | None = None) -> str:
    choices = [] if content is None and finish is None else [
        {"index": 0, "delta": {"content": content} if content else {}, "finish_reason": finish}]
    return "data: " + json.dumps({"id": "c", "object": "chat.completion.chunk", "created": 1,
                                  "model": "slow-model", "choices": choices})


def streamed(*parts: str | float) -> Reply:
    """A model writing `parts` (text, or a pause in seconds), then stopping."""
    events: list[str | float] = [p if isinstance(p, float) else chunk(p) for p in parts]
    return Reply(sse=[*events, chunk(finish="stop"), "data: [DONE]"])


@pytest.fixture
def model(settings: Any) -> Any:
    """A loopback model server as the installation's model; the analyst's bound is 3 s."""
    server = FakeServer().start()
    settings.LLM_PROVIDER, settings.LLM_MODEL = "openai", "slow-model"
    settings.LLM_BASE_URL, settings.LLM_API_KEY = server.url + "/v1", "sk-test"
    settings.LLM_SCRIPT, settings.LLM_ROLE_OVERRIDES = "", {}
    settings.INTERVIEW_ANALYST_TIMEOUT_S = 3
    yield server
    server.stop()


@pytest.fixture
def scripted(tmp_path: Path, settings: Any) -> None:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"analyst": [json.dumps(QUESTIONS), "[]"]}))
    settings.LLM_PROVIDER, settings.LLM_SCRIPT = "scripted", str(path)
    settings.LLM_MODEL = settings.LLM_BASE_URL = settings.LLM_API_KEY = ""
    settings.LLM_ROLE_OVERRIDES = {}


def client_for(user: object) -> Client:
    client = Client()
    client.force_login(user)
    return client


def events(client: Client, interview: Interview) -> list[tuple[str, dict[str, Any]]]:
    """The analyst page's server-sent events, in order."""
    response = client.get(reverse("interview_analyst", args=[interview.pk]))
    assert response.status_code == 200
    assert response["Content-Type"] == "text/event-stream"
    assert response["Cache-Control"] == "no-cache"
    body = b"".join(response).decode()
    found = []
    for block in body.split("\n\n"):
        kind = re.search(r"^event: (\S+)$", block, re.M)
        data = re.search(r"^data: (.*)$", block, re.M)
        if kind and data:
            found.append((kind.group(1), json.loads(data.group(1))))
    return found


def test_the_first_continue_answers_at_once_with_a_live_thinking_page(
        team_with_roles: dict, model: FakeServer) -> None:
    model.queue(Reply(delay_s=20, body={}))
    client = client_for(team_with_roles["member"])
    started = time.monotonic()
    response = client.post(reverse("interview_new", args=["acme"]), {"request": REQUEST}, **HTMX)
    assert time.monotonic() - started < 10  # the model (20 s) is not waited for here
    interview = Interview.objects.get()
    assert model.requests == [] and not LLMCall.objects.exists()
    html = response.content.decode()
    assert response.status_code == 200 and "<html" not in html
    assert "<title>Thinking about your answers" in html
    assert 'id="analyst-thinking"' in html
    assert f'data-stream="{reverse("interview_analyst", args=[interview.pk])}"' in html
    # The live line is a status region; the questions list is announced as it grows.
    assert re.search(r'<p class="busy thinking-status" role="status" aria-live="polite">', html)
    assert re.search(r'<ol data-questions aria-live="polite">', html)
    assert "This takes at most 3 seconds. If the model needs longer, the wizard goes on with " \
           "its usual questions alone." in html
    questions = reverse("interview_questions", args=[interview.pk])
    assert f'<a href="{questions}" data-go>Go on without waiting</a>' in html
    assert "interview_analyst.js" in client.get(reverse("interview_new", args=["acme"])
                                                ).content.decode()


def test_the_stream_sends_each_question_as_the_model_writes_it_then_the_next_page(
        team_with_roles: dict, model: FakeServer) -> None:
    first, second = (json.dumps(q) for q in QUESTIONS)
    model.queue(streamed("[" + first[:30], 0.3, first[30:] + ", ", 0.3, second + "]"))
    client = client_for(team_with_roles["member"])
    client.post(reverse("interview_new", args=["acme"]), {"request": REQUEST}, **HTMX)
    interview = Interview.objects.get()
    found = events(client, interview)
    assert model.requests[0].body["stream"] is True
    kinds = [kind for kind, _ in found if kind != "tick"]
    assert kinds == ["question", "question", "done"], found
    assert [data["text"] for kind, data in found if kind == "question"] == [
        "Should the greeting be formal or casual?", "Should it use emoji?"]
    done = found[-1][1]
    assert done["url"] == reverse("interview_questions", args=[interview.pk]) + "?group=0"
    assert done["questions"] == 2
    assert done["message"] == "The analyst added 2 more questions; they come after the usual ones."
    interview.refresh_from_db()
    assert [q["text"] for q in interview.questions if q["source"] == "analyst"] == [
        "Should the greeting be formal or casual?", "Should it use emoji?"]
    # Asking again (a reload, a reconnecting EventSource) does not ask the model again.
    again = events(client, interview)
    assert [kind for kind, _ in again] == ["done"] and len(model.requests) == 1


def test_at_the_bound_the_stream_keeps_what_arrived_and_says_so(
        team_with_roles: dict, model: FakeServer) -> None:
    first = json.dumps(QUESTIONS[0])
    model.queue(streamed("[" + first + ", ", 0.5, '{"question": "Sho', 30.0, "uld it?\"}]"))
    client = client_for(team_with_roles["member"])
    client.post(reverse("interview_new", args=["acme"]), {"request": REQUEST}, **HTMX)
    interview = Interview.objects.get()
    started = time.monotonic()
    found = events(client, interview)
    assert time.monotonic() - started < 3 + 2.5
    assert [kind for kind, _ in found if kind == "tick"]  # the seconds counted while it thought
    assert [data["text"] for kind, data in found if kind == "question"] == [
        "Should the greeting be formal or casual?"]
    assert found[-1] == ("done", {
        "url": reverse("interview_questions", args=[interview.pk]) + "?group=0", "questions": 1,
        "message": "The analyst model was stopped after 3 seconds; the 1 more question it had "
                   "written are kept."})
    interview.refresh_from_db()
    assert [q["text"] for q in interview.questions if q["source"] == "analyst"] == [
        "Should the greeting be formal or casual?"]


def test_a_model_silent_past_the_bound_leaves_the_checklist_alone_said_plainly(
        team_with_roles: dict, model: FakeServer) -> None:
    model.queue(Reply(delay_s=20, body={}))
    client = client_for(team_with_roles["member"])
    client.post(reverse("interview_new", args=["acme"]), {"request": REQUEST}, **HTMX)
    interview = Interview.objects.get()
    started = time.monotonic()
    found = events(client, interview)
    assert time.monotonic() - started < 3 + 2.5
    assert found[-1][1]["message"] == ("The analyst model did not answer within 3 seconds, so "
                                       "the wizard goes on with its usual questions alone.")
    interview.refresh_from_db()
    assert not [q for q in interview.questions if q["source"] == "analyst"]


def test_without_javascript_the_post_waits_within_the_bound_and_says_it_gave_up(
        team_with_roles: dict, model: FakeServer) -> None:
    model.queue(Reply(delay_s=20, body={}))
    client = client_for(team_with_roles["member"])
    started = time.monotonic()
    response = client.post(reverse("interview_new", args=["acme"]), {"request": REQUEST})
    assert time.monotonic() - started < 3 + 2.5
    interview = Interview.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("interview_questions", args=[interview.pk])
    page = client.get(response["Location"]).content.decode()
    assert "The analyst model did not answer within 3 seconds, so the wizard goes on with its " \
           "usual questions alone." in page
    assert "What tasks should it do for you?" in page


def test_the_last_checklist_page_thinks_live_and_goes_on_to_the_analysts_questions(
        team_with_roles: dict, scripted: None) -> None:
    client = client_for(team_with_roles["member"])
    client.post(reverse("interview_new", args=["acme"]), {"request": REQUEST})  # no JavaScript
    interview = Interview.objects.get()
    assert interview.analyst_rounds == 1
    for data in [*CHECKLIST, {"q-a1-1": "Formal, always.", "q-a1-2": ""}]:
        interview.refresh_from_db()
        group = navigation.first_open_group(interview.questions, interview.state) or 0
        ids = [q["id"] for q in navigation.question_groups(interview.questions)[group]]
        response = client.post(reverse("interview_questions", args=[interview.pk]),
                               {"group": str(group), "question": ids, **data}, **HTMX)
    html = response.content.decode()
    assert "Thinking about your answers" in html  # the analyst's second round, live
    interview.refresh_from_db()
    assert interview.analyst_rounds == 1 and interview.step == Interview.Step.QUESTIONS
    found = events(client, interview)
    assert found[-1][1]["url"] == reverse("interview_summary", args=[interview.pk])
    assert found[-1][1]["message"] == "Nothing more to ask for now."
    interview.refresh_from_db()
    assert interview.analyst_rounds == 2 and interview.step == Interview.Step.SUMMARY


def test_only_the_interviews_editors_follow_its_analyst(team_with_roles: dict,
                                                       scripted: None) -> None:
    client = client_for(team_with_roles["member"])
    client.post(reverse("interview_new", args=["acme"]), {"request": REQUEST}, **HTMX)
    interview = Interview.objects.get()
    url = reverse("interview_analyst", args=[interview.pk])
    assert Client().get(url).status_code == 302  # to log in
    assert client_for(team_with_roles["outsider"]).get(url).status_code == 404
