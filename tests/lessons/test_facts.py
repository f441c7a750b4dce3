"""Lessons from facts: a mistake that was fixed without anyone reflecting on it (the reflector
was silent, or there is no model for it) is written from the failing tests, the normalised
error and the change that fixed it. Real embedder and PostgreSQL."""

from __future__ import annotations

import pytest

from autocoder.engine.replies import unified_diff
from autocoder.lessons.extraction import change_summary
from autocoder.lessons.services import lessons_extract_from_run
from autocoder.lessons.types import ReflectionNote

BEFORE = {"sched/plugin.py": "def plan(days):\n    return days['Monday']\n"}
AFTER = {"sched/plugin.py": "def plan(days):\n    return days.get('monday', [])\n"}
FAILING = ("tests/test_acceptance.py::test_plan_example_1",
           "tests/test_acceptance.py::test_plan_example_2")


def silent_fix(**changes: object) -> ReflectionNote:
    values: dict[str, object] = {
        "iteration": 1, "error_text": "sched/plugin.py:2: in plan\nKeyError: 'Monday'",
        "failed_approach": "", "reflection": "", "fixed_by_next": True,
        "fix_summary": "Here is the plugin.",
        "failing_tests": FAILING, "fix_diff": unified_diff(BEFORE, AFTER)}
    values.update(changes)
    return ReflectionNote(**values)  # type: ignore[arg-type]


@pytest.mark.django_db
@pytest.mark.usefixtures("embedder")
def test_a_fix_nobody_reflected_on_is_written_from_the_facts(team, make_summary) -> None:
    (lesson,) = lessons_extract_from_run(summary=make_summary(team.pk, [silent_fix()]))

    assert (lesson.kind, lesson.error_signature) == ("negative", "KeyError: <val>")
    fix = "in sched/plugin.py replace `return days['Monday']` with `return days.get('monday', [])`"
    assert lesson.avoidance_rule == (
        f'If test_plan_example_1, test_plan_example_2 fail with "KeyError: <val>": {fix}.')
    assert lesson.title == f"KeyError in test_plan_example_1, test_plan_example_2: {fix}"
    assert lesson.resolution == fix[0].upper() + fix[1:]
    # The code that failed is the approach to avoid; the reply's small talk teaches nothing.
    assert lesson.failed_approach == "sched/plugin.py had `return days['Monday']`"
    assert "Here is the plugin" not in lesson.avoidance_rule + lesson.resolution
    assert "keyerror" in lesson.tags


@pytest.mark.django_db
@pytest.mark.usefixtures("embedder")
def test_a_reflection_still_leads_when_there_is_one(team, make_summary) -> None:
    note = silent_fix(reflection="Day names arrive capitalised.",
                      fix_summary="Normalise day names with .lower() before the lookup.")
    (lesson,) = lessons_extract_from_run(summary=make_summary(team.pk, [note]))
    assert lesson.resolution == "Normalise day names with .lower() before the lookup."


def test_a_change_is_described_file_by_file_code_first() -> None:
    before = {"a/plugin.py": "x = 1\n", "tests/test_generated_x.py": "def test(): pass\n",
              "old.py": "gone\n"}
    after = {"a/plugin.py": "x = 1\ny = 2\n", "a/util.py": "def f():\n    return 1\n",
             "tests/test_generated_x.py": "def test():\n    assert True\n"}
    assert change_summary(unified_diff(before, after)) == (
        "in a/plugin.py add `y = 2`; create a/util.py (and 2 more files)")
    many = {"p.py": "".join(f"line{i}\n" for i in range(5))}
    assert change_summary(unified_diff({}, many) + unified_diff({"p.py": ""}, many)) == (
        "create p.py; in p.py add `line0 / line1 / line2` (and 2 more lines)")
    assert change_summary("") == ""
