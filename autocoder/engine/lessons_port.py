"""The loop's only door to lessons learned: retrieval into prompts, extraction at the end.

Keeping the lessons app behind this small adapter means the loop depends on two calls and the
plain data of autocoder/lessons/types.py (what a run learned), not on the lessons app's models
or embedder. Failures of the lessons store never fail a run: a run without lessons is worse,
not broken, so errors are logged and an empty answer is returned.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from autocoder.lessons.types import ReflectionNote, RunSummary

__all__ = ["ReflectionNote", "Retrieved", "RunSummary", "learn", "retrieve"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Retrieved:
    """Lessons for one prompt: their ids (stored in the checkpoint) and the text to show."""

    ids: list[int] = field(default_factory=list)
    block: str = ""


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


def learn(summary: RunSummary) -> int:
    """Extract lessons from a finished run and credit the lessons it used; returns how many
    lessons were written."""
    from autocoder.lessons.services import lessons_extract_from_run, lessons_record_outcome

    try:
        written = lessons_extract_from_run(summary=summary)
        if summary.lessons_used:
            lessons_record_outcome(summary=summary)
    except Exception:
        logger.exception("lesson extraction failed for run %s", summary.run_id)
        return 0
    return len(written)
