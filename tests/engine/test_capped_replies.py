"""A reply that stops at its length limit is a fact, not a mystery (docs/llm.md, "Reply caps"):
each call keeps how its reply ended and why it was made, the run page says it in plain words,
a cut reply is continued, and an implementer's reply still cut before any file was whole is
asked for once more, shorter, in the same attempt. (Over the OpenAI wire:
tests/engine/test_cut_replies_wire.py.)

The model is the scripted provider (the stand-in for a model server we cannot reach here), held
to the role's reply cap as a model is; the sandbox, the services and the pages are real.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from autocoder.engine.writing import SHORTER
from runs.models import Run
from runs.services import driving
from tests.engine.conftest import iterations, load_script, prompts

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

WANDERING = " ".join(["First I will think about how names are greeted in many languages."] * 30)


def test_a_reply_still_cut_after_continuing_is_asked_again_shorter_without_costing_an_attempt(
        start_run: Callable[..., Run], settings: Any, people: dict[str, Any]) -> None:
    settings.LLM_ROLE_OVERRIDES = {"implementer": {"max_tokens": 150}}
    steps = load_script("success")
    good = steps["implementer"][0]
    assert len(good.split()) <= 150 < len(WANDERING.split())
    run = driving.run_drive(run_id=start_run(
        {**steps, "implementer": [f"{WANDERING}\n\n{good}", WANDERING, WANDERING, good]}).id)

    assert run.status == Run.Status.SUCCEEDED, run.error
    (only,) = iterations(run)  # the cut reply cost no attempt
    calls = list(run.llm_calls.filter(role="implementer").order_by("id"))
    assert [(c.iteration, c.purpose, c.finish_reason) for c in calls] == [
        (1, "", "length"), (1, "continue", "length"), (1, "continue", "length"),
        (1, "shorter", "stop")]
    assert len(calls[0].reply.split()) == 150 and "```" not in calls[0].reply
    sent = prompts(run, "implementer")
    assert SHORTER in sent[3] and SHORTER not in sent[0]

    client = Client()
    client.force_login(people["requester"])
    page = client.get(reverse("run_detail", args=[run.pk]), {"iteration": 1}).content.decode()
    assert ("The implementer&#x27;s reply stopped at its length limit; it was asked to continue "
            "2 times and is still cut") in page


def test_a_reply_cut_every_time_fails_the_attempt_with_its_reason(
        start_run: Callable[..., Run], settings: Any) -> None:
    settings.LLM_ROLE_OVERRIDES = {"implementer": {"max_tokens": 150}}
    steps = load_script("success")
    run = driving.run_drive(run_id=start_run(
        {**steps, "implementer": [f"{WANDERING}\n\n{steps['implementer'][0]}"]},
        max_iterations=1).id)

    assert run.status == Run.Status.FAILED
    (only,) = iterations(run)
    assert not only.tests_ran and "no file blocks" in only.failures[0]
    assert list(run.llm_calls.filter(role="implementer").values_list(
        "purpose", "finish_reason")) == [("", "length"), ("continue", "length"),
                                         ("continue", "length"), ("shorter", "length"),
                                         ("continue", "length"), ("continue", "length")]
