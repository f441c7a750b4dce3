"""Lessons end to end: run 1 makes a mistake, reflects and fixes it, and writes a lesson; run 2
makes the same mistake, retrieves that lesson and shows it to the implementer.

Real parts throughout: the offline MiniLM embedder, pgvector retrieval, extraction.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from autocoder.engine import services
from autocoder.lessons.models import Lesson
from projects.models import Run
from tests.engine.conftest import iterations, prompts

pytestmark = [pytest.mark.django_db, pytest.mark.slow]


def test_a_repeated_mistake_retrieves_the_lesson_of_the_first_run(
        start_run: Callable[..., Run]) -> None:
    first = services.run_drive(run_id=start_run("fixed_on_second", use_lessons=True).id)
    assert first.status == Run.Status.SUCCEEDED
    assert first.lessons_written >= 1
    lesson = Lesson.objects.get(kind="negative")
    assert "comma" in lesson.resolution.lower()
    assert lesson.error_signature == iterations(first)[0].error_signature

    second = services.run_drive(run_id=start_run("fixed_on_second", use_lessons=True).id)
    assert second.status == Run.Status.SUCCEEDED
    mistake, fixed = iterations(second)
    assert lesson.id in mistake.lessons_used and lesson.id in fixed.lessons_used
    # After the same failure, the implementer is shown the lesson's text.
    retry_prompt = prompts(second, "implementer")[1]
    assert "# Lessons from earlier runs" in retry_prompt
    assert f"Avoid: {lesson.title}" in retry_prompt
    assert lesson.resolution in retry_prompt
    lesson.refresh_from_db()
    assert lesson.retrieved_count >= 2
    assert lesson.helped_count == 1, "run 2 succeeded with the lesson in its prompts"


def test_runs_without_lessons_neither_read_nor_write_them(
        start_run: Callable[..., Run]) -> None:
    run = services.run_drive(run_id=start_run("fixed_on_second", use_lessons=False).id)
    assert run.status == Run.Status.SUCCEEDED
    assert run.lessons_written == 0 and not Lesson.objects.exists()
    assert "# Lessons from earlier runs" not in prompts(run, "implementer")[1]
