"""Every step survives a run that ends before its first checkpoint.

The model endpoint is a ScriptedProvider subclass that fails, standing in for a hosted LLM we
cannot reach here; the services, the lessons store and PostgreSQL are the production code.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest

from autocoder.lessons.models import Lesson
from autocoder.llm import LLMBadRequest, Message, ScriptedProvider
from runs.models import Project, Run
from runs.services import driving

pytestmark = pytest.mark.django_db

TOO_LONG = "HTTP 400: the prompt is longer than the model's context window (2048 tokens)"


class ContextTooSmall(ScriptedProvider):
    """A model whose server refuses every prompt: a failure trying again cannot fix."""

    name = "tiny-context"

    def _attempt(self, messages: list[Message], **kwargs: Any) -> Any:
        raise LLMBadRequest(TOO_LONG)


def test_a_run_whose_first_model_call_fails_for_good_ends_failed_and_says_why(
        start_run: Callable[..., Run], caplog: pytest.LogCaptureFixture) -> None:
    provider = ContextTooSmall({})
    # An empty script: the run needs no configured model, its endpoint is the provider here.
    run = start_run({}, provider="tiny-context", use_lessons=True)
    with caplog.at_level(logging.WARNING):
        final = driving.run_drive(run_id=run.id,
                                   provider_factory=lambda run, role: provider)

    assert final.status == Run.Status.FAILED
    assert final.error == f"step 'plan' of attempt 1 failed: LLMBadRequest: {TOO_LONG}"
    assert (final.iteration, final.phase, final.lessons_written) == (0, Run.Phase.DONE, 0)
    assert final.project.status == Project.Status.FAILED
    assert final.llm_calls.count() == 1, "refused at once, not retried"
    assert not Lesson.objects.exists()
    # The end of the run (learn) went through on its first attempt: nothing crashed.
    assert not [r for r in caplog.records if "learn" in r.getMessage()], caplog.text
