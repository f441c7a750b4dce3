"""The loop's only door to lessons learned: retrieval into prompts, extraction at the end.

Keeping the lessons app behind this small adapter means the loop depends on four calls, not on
the lessons app's models or embedder. Failures of the lessons store never fail a run: a run
without lessons is worse, not broken, so errors are logged and an empty answer is returned.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Retrieved:
    """Lessons for one prompt: their ids (stored in the checkpoint) and the text to show."""

    ids: list[int] = field(default_factory=list)
    block: str = ""


@dataclass(frozen=True)
class Reflection:
    """One failed iteration. `reflection` is empty when the reflector said nothing (or there is
    no model for it); the failing tests and the diff that fixed it still make a lesson."""

    iteration: int
    error_text: str
    failed_approach: str
    reflection: str
    fixed_by_next: bool
    fix_summary: str
    failing_tests: list[str] = field(default_factory=list)
    fix_diff: str = ""


@dataclass(frozen=True)
class RunOutcome:
    team_id: int
    run_id: int
    spec_name: str
    spec_summary: str
    succeeded: bool
    final_approach: str
    final_iteration: int
    reflections: list[Reflection] = field(default_factory=list)
    lessons_used: list[int] = field(default_factory=list)


def retrieve(*, team_id: int, query: str, k: int = 5) -> Retrieved:
    """The lessons most relevant to `query` for this team, counted as retrieved."""
    if not query.strip():
        return Retrieved()
    # Imported here: the embedder loads a model, which steps that never retrieve should not pay.
    from autocoder.lessons.selectors import lessons_prompt_block, lessons_retrieve
    from autocoder.lessons.services import lessons_mark_retrieved

    try:
        found = lessons_retrieve(team_id=team_id, query=query, k=k)
        if found:
            lessons_mark_retrieved(lesson_ids=[lesson.id for lesson in found])
    except Exception:
        logger.exception("lesson retrieval failed; continuing without lessons")
        return Retrieved()
    return Retrieved(ids=[lesson.id for lesson in found], block=lessons_prompt_block(found))


def learn(outcome: RunOutcome) -> int:
    """Extract lessons from a finished run and credit the lessons it used; returns how many
    lessons were written."""
    from autocoder.lessons.services import lessons_extract_from_run, lessons_record_outcome
    from autocoder.lessons.types import ReflectionNote, RunSummary

    summary = RunSummary(
        team_id=outcome.team_id, run_id=outcome.run_id, spec_name=outcome.spec_name,
        spec_summary=outcome.spec_summary, succeeded=outcome.succeeded,
        final_approach=outcome.final_approach, final_iteration=outcome.final_iteration,
        reflections=[ReflectionNote(
            iteration=r.iteration, error_text=r.error_text, failed_approach=r.failed_approach,
            reflection=r.reflection, fixed_by_next=r.fixed_by_next, fix_summary=r.fix_summary,
            failing_tests=tuple(r.failing_tests), fix_diff=r.fix_diff,
        ) for r in outcome.reflections],
        lessons_used=list(outcome.lessons_used),
    )
    try:
        written = lessons_extract_from_run(summary=summary)
        if outcome.lessons_used:
            lessons_record_outcome(summary=summary)
    except Exception:
        logger.exception("lesson extraction failed for run %s", outcome.run_id)
        return 0
    return len(written)
