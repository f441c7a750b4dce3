"""The wizard while the analyst thinks (issue 28, item 7): the probe's first Continue took
31.8 s with a local model behind a frozen form. With JavaScript (htmx) the post answers at once
with a "Thinking about your answers" page; its script starts the analyst's round (a POST; the
round runs on a thread of its own within the bound) and polls the same address for each
question as the model writes it, then the next page. Without JavaScript the post waits (within
the bound) as before, and a model that gave up is said so in plain words.

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

# The round runs on a thread of its own, which sees only committed rows.
pytestmark = pytest.mark.django_db(transaction=True)

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


def polled(client: Client, interview: Interview) -> dict[str, Any]:
    """What the thinking page's poll reads: the questions so far, the round's result."""
    response = client.get(reverse("interview_analyst", args=[interview.pk]))
    assert response.status_code == 200 and response["Content-Type"] == "application/json"
    return dict(response.json())


def round_over(interview: Interview) -> Interview:
    """Waits for a round the page stopped waiting for (it goes on behind) to end."""
    from projects.services.interviews import AnalystProgress

    started = time.monotonic()
    while AnalystProgress(interview.pk).running():
        assert time.monotonic() - started < 30, "the analyst's round did not end"
        time.sleep(0.1)
    interview.refresh_from_db()
    return interview


def analyst_round(client: Client, interview: Interview) -> dict[str, Any]:
    """What the thinking page's script does: start the round, poll until it is done. Returns
    the result, with "seen": the questions each poll saw while it was going on."""
    started = time.monotonic()
    response = client.post(reverse("interview_analyst", args=[interview.pk]))
    assert response.status_code == 200
    seen = []
    while True:
        data = polled(client, interview)
        if data["done"] is not None:
            return {**data["done"], "seen": seen}
        seen.append(data["questions"])
        assert time.monotonic() - started < 20, seen
        time.sleep(0.1)


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
    assert f'data-analyst="{reverse("interview_analyst", args=[interview.pk])}"' in html
    # The live line is a status region; the questions list is announced as it grows.
    assert re.search(r'<p class="busy thinking-status" role="status" aria-live="polite">', html)
    assert re.search(r'<ol data-questions aria-live="polite">', html)
    assert "This takes at most 3 seconds (as fast as the model writes). If it needs longer, " \
           "the wizard goes on and its questions are added to yours when they arrive." in html
    questions = reverse("interview_questions", args=[interview.pk])
    assert f'<a href="{questions}" data-go>Go on without waiting</a>' in html
    assert "interview_analyst.js" in client.get(reverse("interview_new", args=["acme"])
                                                ).content.decode()


def test_the_round_keeps_each_question_as_the_model_writes_it_then_names_the_next_page(
        team_with_roles: dict, model: FakeServer, clean_redis: Any) -> None:
    first, second = (json.dumps(q) for q in QUESTIONS)
    model.queue(streamed("[" + first[:30], 0.3, first[30:] + ", ", 1.5, second + "]"))
    client = client_for(team_with_roles["member"])
    client.post(reverse("interview_new", args=["acme"]), {"request": REQUEST}, **HTMX)
    interview = Interview.objects.get()
    assert polled(client, interview) == {"questions": [], "done": None}
    seen = analyst_round(client, interview)["seen"]
    assert model.requests[0].body["stream"] is True  # read as it is written
    asked = ["Should the greeting be formal or casual?", "Should it use emoji?"]
    # The first question was there for the page while the model was writing the second.
    assert [asked[0]] in seen
    # What the round ended with (a busy machine may have let the page go on at its bound).
    interview = round_over(interview)
    done = polled(client, interview)["done"]
    assert done == {
        "url": reverse("interview_questions", args=[interview.pk]) + "?group=0",
        "questions": asked,
        "message": "The analyst added 2 more questions; they come after the usual ones."}
    interview.refresh_from_db()
    assert [q["text"] for q in interview.questions if q["source"] == "analyst"] == asked
    # Asking again (a reload, a second tab) does not ask the model again.
    assert analyst_round(client, interview)["questions"] == [] and len(model.requests) == 1


def test_at_the_bound_the_page_goes_on_and_the_rest_of_the_questions_follow(
        team_with_roles: dict, model: FakeServer) -> None:
    first = json.dumps(QUESTIONS[0])
    model.queue(streamed("[" + first + ", ", 0.5, '{"question": "Sho', 4.0, "uld it?\"}]"))
    client = client_for(team_with_roles["member"])
    client.post(reverse("interview_new", args=["acme"]), {"request": REQUEST}, **HTMX)
    interview = Interview.objects.get()
    started = time.monotonic()
    done = analyst_round(client, interview)
    assert time.monotonic() - started < 3 + 2.5
    done.pop("seen")
    assert done == {
        "url": reverse("interview_questions", args=[interview.pk]),
        "questions": ["Should the greeting be formal or casual?"],
        "message": "The analyst model is still thinking after 3 seconds, so the wizard goes on; "
                   "its questions (1 written so far) are added to yours when it is done."}
    # The requester's next page says it is still thinking; then its questions are there.
    page = client.get(reverse("interview_questions", args=[interview.pk])).content.decode()
    assert "The analyst model is still thinking about your answers." in page
    interview = round_over(interview)
    assert [q["text"] for q in interview.questions if q["source"] == "analyst"] == [
        "Should the greeting be formal or casual?", "Should it?"]
    page = client.get(reverse("interview_questions", args=[interview.pk])).content.decode()
    assert "still thinking" not in page


def test_a_model_silent_past_the_bound_lets_the_requester_go_on_said_plainly(
        team_with_roles: dict, model: FakeServer) -> None:
    model.queue(Reply(delay_s=5, body={}))
    client = client_for(team_with_roles["member"])
    client.post(reverse("interview_new", args=["acme"]), {"request": REQUEST}, **HTMX)
    interview = Interview.objects.get()
    started = time.monotonic()
    done = analyst_round(client, interview)
    assert time.monotonic() - started < 3 + 2.5
    assert done["questions"] == []
    assert done["message"] == ("The analyst model is still thinking after 3 seconds, so the "
                               "wizard goes on; its questions are added to yours when it is "
                               "done.")
    interview = round_over(interview)  # it answered nothing usable
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
    done = analyst_round(client, interview)
    assert done["url"] == reverse("interview_summary", args=[interview.pk])
    assert done["message"] == "Nothing more to ask for now."
    interview.refresh_from_db()
    assert interview.analyst_rounds == 2 and interview.step == Interview.Step.SUMMARY


def test_only_the_interviews_editors_follow_its_analyst(team_with_roles: dict,
                                                       scripted: None) -> None:
    client = client_for(team_with_roles["member"])
    client.post(reverse("interview_new", args=["acme"]), {"request": REQUEST}, **HTMX)
    interview = Interview.objects.get()
    url = reverse("interview_analyst", args=[interview.pk])
    assert Client().post(url).status_code == 302  # to log in
    assert client_for(team_with_roles["outsider"]).post(url).status_code == 404
    assert client_for(team_with_roles["outsider"]).get(url).status_code == 404
