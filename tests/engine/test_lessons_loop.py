"""Lessons end to end: run 1 makes a mistake, reflects and fixes it, and writes a lesson; run 2
makes the same mistake, retrieves that lesson and shows it to the implementer.

Real parts throughout: the offline MiniLM embedder, pgvector retrieval, extraction.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from autocoder.lessons.models import Lesson
from runs.models import Run
from runs.services import driving
from tests.engine.conftest import greeter_spec, iterations, prompts

pytestmark = [pytest.mark.django_db, pytest.mark.slow]


def test_a_repeated_mistake_retrieves_the_lesson_of_the_first_run(
        start_run: Callable[..., Run]) -> None:
    first = driving.run_drive(run_id=start_run("fixed_on_second", use_lessons=True).id)
    assert first.status == Run.Status.SUCCEEDED
    assert first.lessons_written >= 1
    lesson = Lesson.objects.get(kind="negative")
    assert "comma" in lesson.resolution.lower()
    assert lesson.error_signature == iterations(first)[0].error_signature

    second = driving.run_drive(run_id=start_run("fixed_on_second", use_lessons=True).id)
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
    run = driving.run_drive(run_id=start_run("fixed_on_second", use_lessons=False).id)
    assert run.status == Run.Status.SUCCEEDED
    assert run.lessons_written == 0 and not Lesson.objects.exists()
    assert "# Lessons from earlier runs" not in prompts(run, "implementer")[1]


def test_a_fix_nobody_reflected_on_still_teaches_a_later_run(
        start_run: Callable[..., Run]) -> None:
    # Only the implementer answers, wrong then right: no plan, no reflection (as with no
    # reflector model). The lesson comes from the facts: the failing tests, the normalised
    # error and the change that fixed it.
    first = driving.run_drive(run_id=start_run("fixed_silently", use_lessons=True).id)
    assert first.status == Run.Status.SUCCEEDED
    mistake, _ = iterations(first)
    assert mistake.reflection == "" and first.plan == ""
    assert first.lessons_written == 1
    lesson = Lesson.objects.get()
    assert lesson.kind == "negative" and lesson.error_signature == mistake.error_signature
    assert lesson.error_signature.startswith("AssertionError")
    # The rule names the failing tests, the error and the fix, quoting the code both ways.
    assert "test_greet_example_1" in lesson.avoidance_rule
    assert "AssertionError" in lesson.avoidance_rule
    assert 'replace `return {"message": f"Hello {name}"}`' in lesson.avoidance_rule
    assert 'with `return {"message": f"Hello, {name}!"}`' in lesson.avoidance_rule
    assert "greeter/plugin.py" in lesson.resolution

    # A similar request, worded differently, making the same mistake is shown the lesson.
    similar = greeter_spec(summary="Says hello to someone, with a comma after Hello.")
    second = driving.run_drive(run_id=start_run("fixed_silently", use_lessons=True,
                                                 spec=similar).id)
    assert second.status == Run.Status.SUCCEEDED
    retry = iterations(second)[1]
    assert lesson.id in retry.lessons_used
    assert f"Avoid: {lesson.title[:60]}" in prompts(second, "implementer")[1]
