"""The interview's analyst model (issue 47): it reads every answer the form holds and is told not
to ask them again, and a slow model is waited for as long as its measured speed (the Model
page's) says; a requester who goes on gets its questions when they arrive (that half is
tests/projects/test_interview_progress.py's).

The model is tests/llm/roleserver.py, a loopback OpenAI-compatible server that streams (a
stand-in for a local model on a small machine, which this machine cannot be made to be); the
database, Redis, the pages and the wizard's thread are real.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from autocoder.llm.models import ModelSpeed
from autocoder.llm.types import safe_url
from projects.interview import analyst, checklist
from projects.models import Interview
from runs.models import LLMCall
from tests.factories import UserFactory
from tests.llm.roleserver import RoleServer, Said

REQUEST = "Sum the hours in the CSV export of our team's week, per person and per day."
QUESTIONS = [
    {"question": "Should half hours be rounded?", "priority": "essential",
     "assumption": "No: hours are added as written."},
    {"question": "Should the days keep the order of the export?", "priority": "important",
     "assumption": "Yes."},
]
HTMX = {"HTTP_HX_REQUEST": "true"}


def test_the_analyst_reads_every_answer_the_form_holds_and_is_told_not_to_ask_again() -> None:
    state: dict[str, Any] = {
        "summary": "Sums a week's hours.", "autonomy": "full",
        "constraints": "Standard library only\nHours may be fractions",
        "services": {"uses": "no"}, "testing": {"strategy": "comprehensive"},
        "commands": [{"key": "c1", "name": "week-report", "description": "Sum the export.",
                      "inputs": "csv: the export, columns name, day, hours",
                      "outputs": "hours per person\nhours per day", "edge_cases": "Refuse bad rows",
                      "examples": []}]}
    questions = checklist.sync_questions([], state)
    skipped = next(q for q in questions if q["kind"] == "constraints")
    skipped["skipped"] = True
    system, user = analyst.analyst_messages(REQUEST, state, questions)
    assert "never ask it again, in other words either" in system.content
    assert "never ask for what an example already shows (a layout, a format" in system.content
    text = user.content
    assert text.index("Already answered on the form (never ask these again):") < text.index(
        "Task week-report")
    for answer in ("inputs: csv: the export, columns name, day, hours",
                   "outputs: hours per person; hours per day",
                   "when something is missing or looks wrong: Refuse bad rows",
                   "Rules it must follow: Standard library only; Hours may be fractions",
                   "How autonomous the builder may be: Fully automatic",
                   "Talks to another system: no", "How hard it is tested: Comprehensive",
                   "What it does: Sums a week's hours.",
                   f"Skipped: {skipped['text']} (assume: "):
        assert answer in text, answer


@pytest.fixture
def slow_model(settings: Any) -> Iterator[RoleServer]:
    """A model that thinks 40 seconds before it writes, known (measured) to write 8 tokens a
    second, as the Model page shows after its replies."""
    reply = json.dumps(QUESTIONS)
    server = RoleServer({"analyst": [Said(reply, delay_s=40)]},
                        role_of=lambda body: "analyst").start()
    settings.LLM_PROVIDER, settings.LLM_MODEL = "openai", "slow-stub"
    settings.LLM_BASE_URL, settings.LLM_API_KEY = server.url, ""
    settings.LLM_SCRIPT, settings.LLM_ROLE_OVERRIDES = "", {}
    settings.LLM_TIMEOUT_S, settings.LLM_SYSTEM_MESSAGES = 120.0, "keep"
    settings.INTERVIEW_ANALYST_TIMEOUT_S = 15
    ModelSpeed.objects.create(provider="openai", base_url=safe_url(server.url),
                              model="slow-stub", tokens_per_s=8.0, replies=6)
    yield server
    server.stop()


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)  # the wizard's round runs on a thread of its own
def test_a_model_that_answers_after_40_seconds_is_waited_for_and_its_questions_kept(
        team_with_roles: dict, slow_model: RoleServer) -> None:
    admin = Client()
    admin.force_login(UserFactory(is_staff=True))
    assert "writes about 8 tokens a second" in admin.get(reverse("llm:model_settings")
                                                         ).content.decode()

    client = Client()
    client.force_login(team_with_roles["member"])
    html = client.post(reverse("interview_new", args=["acme"]), {"request": REQUEST},
                       **HTMX).content.decode()
    # 400 tokens at 8 a second, a quarter more and 5 seconds to read: 67.5 s, not 15.
    assert "This takes at most 68 seconds (as fast as the model writes)" in html
    interview = Interview.objects.get()
    url = reverse("interview_analyst", args=[interview.pk])
    started = time.monotonic()
    client.post(url)
    while (done := client.get(url).json()["done"]) is None:
        assert time.monotonic() - started < 75, "the wizard stopped waiting for the analyst"
        time.sleep(0.5)
    waited = time.monotonic() - started

    assert waited >= 40
    asked = [q["question"] for q in QUESTIONS]
    assert done["questions"] == asked
    assert done["message"] == "The analyst added 2 more questions; they come after the usual ones."
    interview.refresh_from_db()
    assert [q["text"] for q in interview.questions if q["source"] == "analyst"] == asked
    call = LLMCall.objects.get(role="analyst")
    assert call.error == "" and json.loads(call.reply) == QUESTIONS
    assert len(slow_model.requests) == 1
