"""Writes for lessons: extraction after a run, counters, curation from the pages."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence

import numpy as np
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.exceptions import PermissionDenied
from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from autocoder.lessons.embedder import embed_text, embed_texts, embedder_identity
from autocoder.lessons.extraction import (
    MAX_FIELD_CHARS,
    MAX_TITLE_CHARS,
    LessonDraft,
    clean_tags,
    draft_embedding_text,
    drafts_for_run,
    embedding_text,
    error_head,
    identity_text,
    refine_with_reflector,
)
from autocoder.lessons.models import Lesson, LessonOutcome, LessonSource
from autocoder.lessons.permissions import can_curate, can_promote
from autocoder.lessons.selectors import lessons_nearest
from autocoder.lessons.types import ReflectionNote, RunSummary
from autocoder.signatures import normalize_error_signature
from teams.models import Team

__all__ = [
    "ReflectionNote", "RunSummary", "lesson_create", "lesson_promote", "lesson_restore",
    "lesson_retire", "lesson_update", "lessons_extract_from_run", "lessons_mark_retrieved",
    "lessons_record_outcome", "lessons_reembed",
]

logger = logging.getLogger(__name__)
User = AbstractBaseUser | AnonymousUser

# Merging a new lesson into a live one of the same kind and scope takes two steps. First the
# stored embeddings shortlist candidates (cosine >= DUPLICATE_SHORTLIST); then the lessons'
# identity texts (mistake + fix, or the approach alone, see extraction.identity_text) are
# compared, and DUPLICATE_SIMILARITY or more means "the same lesson seen again".
# Tuned with the real MiniLM embedder on example lessons written the way extraction writes
# them: the same lesson from two runs on different tasks scored 0.75-0.86 (KeyError on
# un-normalised weekday names, a missing dateutil module, datetimes that are not JSON
# serialisable, dict-based command dispatch, Decimal for money); different lessons at most
# 0.60 (a missing payload key vs weekday case, both KeyError; pytz vs dateutil) and different
# approaches to one task 0.39. 0.68 sits in the middle of that gap. Mistakes must also share
# the exception name: "missing dateutil" and "datetime not JSON serialisable" are different
# lessons even where their words overlap.
DUPLICATE_SIMILARITY = 0.68
DUPLICATE_SHORTLIST = 0.45
DUPLICATE_CANDIDATES = 10


class LessonInputError(ValueError):
    """A lesson was given unusable input; the message names the field."""


def _require(allowed: bool, action: str) -> None:
    if not allowed:
        raise PermissionDenied(f"You may not {action} this lesson.")


def _text(value: str, field: str, *, required: bool = False, limit: int = MAX_FIELD_CHARS) -> str:
    value = (value or "").strip()
    if required and not value:
        raise LessonInputError(f"{field} must not be empty")
    if len(value) > limit:
        raise LessonInputError(f"{field} is longer than {limit} characters")
    return value


def _embedding_text_of(lesson: Lesson) -> str:
    return embedding_text(
        kind=lesson.kind, title=lesson.title, error_signature=lesson.error_signature,
        avoidance_rule=lesson.avoidance_rule, resolution=lesson.resolution,
        failed_approach=lesson.failed_approach, task_context=lesson.task_context)


def _vector_for(lesson: Lesson) -> np.ndarray:
    return embed_text(_embedding_text_of(lesson))


def lesson_create(*, kind: str, title: str, avoidance_rule: str, team_id: int | None = None,
                  task_context: str = "", error_text: str = "", failed_approach: str = "",
                  resolution: str = "", tags: Iterable[str] = (),
                  source_run_id: int | None = None,
                  source_iteration: int | None = None) -> Lesson:
    """A lesson written by hand (admin, imports, tests); never merged with existing ones."""
    if kind not in Lesson.Kind.values:
        raise LessonInputError(f"kind must be one of {', '.join(Lesson.Kind.values)}")
    lesson = Lesson(
        kind=kind, team_id=team_id, title=_text(title, "title", required=True,
                                                limit=MAX_TITLE_CHARS),
        avoidance_rule=_text(avoidance_rule, "avoidance rule", required=True),
        task_context=_text(task_context, "task context"),
        error_signature=normalize_error_signature(error_text),
        failed_approach=_text(failed_approach, "failed approach"),
        resolution=_text(resolution, "resolution"), tags=list(clean_tags(tags)),
        source_run_id=source_run_id, source_iteration=source_iteration,
    )
    lesson.embedding, lesson.embedded_with = _vector_for(lesson), embedder_identity()
    lesson.save()
    return lesson


# --- extraction -----------------------------------------------------------------------------

def _already_extracted(run_id: int, draft: LessonDraft) -> bool:
    return LessonSource.objects.filter(run_id=run_id, iteration=draft.iteration,
                                       kind=draft.kind).exists()


def _lock_team_lessons(team_id: int) -> None:
    """Serialise extraction per team so two runs ending together cannot both create the same
    lesson, and a retried extraction of one run sees the first one's rows."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [f"lessons:{team_id}"])


def _identity(lesson: Lesson | LessonDraft) -> str:
    return identity_text(kind=lesson.kind, error_signature=lesson.error_signature,
                         failed_approach=lesson.failed_approach, resolution=lesson.resolution)


def _find_duplicate(*, team_id: int, draft: LessonDraft, vector: np.ndarray) -> Lesson | None:
    shortlist = [c.lesson for c in lessons_nearest(team_id=team_id, vector=vector,
                                                   limit=DUPLICATE_CANDIDATES, kind=draft.kind)
                 if c.similarity >= DUPLICATE_SHORTLIST]
    if draft.kind == Lesson.Kind.NEGATIVE:
        head = error_head(draft.error_signature)
        shortlist = [c for c in shortlist if error_head(c.error_signature) == head]
    if not shortlist:
        return None
    vectors = embed_texts([_identity(draft), *(_identity(c) for c in shortlist)])
    similarities = vectors[1:] @ vectors[0]
    best = int(np.argmax(similarities))
    return shortlist[best] if similarities[best] >= DUPLICATE_SIMILARITY else None


def _lesson_merge(*, lesson: Lesson, draft: LessonDraft) -> Lesson:
    locked = Lesson.objects.select_for_update().get(pk=lesson.pk)
    locked.tags = list(clean_tags([*locked.tags, *draft.tags]))
    locked.occurrences = F("occurrences") + 1
    locked.save(update_fields=["tags", "occurrences", "updated_at"])
    locked.refresh_from_db()
    return locked


def _lesson_from_draft(*, summary: RunSummary, draft: LessonDraft,
                       vector: np.ndarray) -> Lesson:
    return Lesson.objects.create(
        kind=draft.kind, title=draft.title, task_context=draft.task_context,
        error_signature=draft.error_signature, failed_approach=draft.failed_approach,
        resolution=draft.resolution, avoidance_rule=draft.avoidance_rule, tags=list(draft.tags),
        team_id=summary.team_id, source_run_id=summary.run_id,
        source_iteration=draft.iteration or None, embedding=vector,
        embedded_with=embedder_identity(),
    )


def _lesson_write(*, summary: RunSummary, draft: LessonDraft, vector: np.ndarray) -> Lesson:
    with transaction.atomic():
        _lock_team_lessons(summary.team_id)
        source = (LessonSource.objects.select_related("lesson")
                  .filter(run_id=summary.run_id, iteration=draft.iteration, kind=draft.kind)
                  .first())
        if source is not None:
            return source.lesson
        duplicate = _find_duplicate(team_id=summary.team_id, draft=draft, vector=vector)
        if duplicate is not None:
            lesson = _lesson_merge(lesson=duplicate, draft=draft)
        else:
            lesson = _lesson_from_draft(summary=summary, draft=draft, vector=vector)
        LessonSource.objects.create(lesson=lesson, team_id=summary.team_id,
                                    run_id=summary.run_id, iteration=draft.iteration,
                                    kind=draft.kind, merged=duplicate is not None)
    return lesson


def lessons_reembed(*, everything: bool = False, batch_size: int = 256,
                    progress: Callable[[int, int], None] | None = None) -> int:
    """Embed lessons again with the current model; returns how many were rewritten.

    By default only lessons embedded by another model (after EMBEDDER or EMBEDDINGS_MODEL
    changed); `everything` redoes all. Each batch is its own transaction, so an interrupted
    run keeps its progress and a second run continues where it stopped.
    """
    identity = embedder_identity()
    pending = Lesson.objects.all() if everything else Lesson.objects.exclude(
        embedded_with=identity)
    ids = list(pending.order_by("id").values_list("id", flat=True))
    for start in range(0, len(ids), batch_size):
        with transaction.atomic():
            batch = list(Lesson.objects.select_for_update().filter(
                id__in=ids[start:start + batch_size]).order_by("id"))
            vectors = embed_texts([_embedding_text_of(lesson) for lesson in batch])
            for lesson, vector in zip(batch, vectors, strict=True):
                lesson.embedding, lesson.embedded_with = vector, identity
            Lesson.objects.bulk_update(batch, ["embedding", "embedded_with"])
        if progress is not None:
            progress(min(start + batch_size, len(ids)), len(ids))
    return len(ids)


def lessons_extract_from_run(*, summary: RunSummary,
                             reflector: object | None = None) -> list[Lesson]:
    """Write the lessons of a finished run: a negative lesson per reflection that led to a fix,
    a positive one for the approach that succeeded. Near-duplicates merge into the existing
    lesson. Idempotent per (run, iteration): a second call writes nothing and returns the same
    lessons. Outcomes of the lessons the run used move only through lessons_record_outcome.
    """
    if not Team.objects.filter(pk=summary.team_id).exists():
        raise LessonInputError(f"team {summary.team_id} does not exist")
    pending = [d for d in drafts_for_run(summary) if not _already_extracted(summary.run_id, d)]
    # The model is asked only about new drafts, so a retried extraction costs no tokens.
    pending = [refine_with_reflector(draft, reflector) for draft in pending]
    vectors = embed_texts([draft_embedding_text(d) for d in pending])
    for draft, vector in zip(pending, vectors, strict=True):
        _lesson_write(summary=summary, draft=draft, vector=vector)
    return lessons_of_run(run_id=summary.run_id)


def lessons_of_run(*, run_id: int) -> list[Lesson]:
    """The lessons a run wrote or re-confirmed, in the order it did."""
    sources = LessonSource.objects.filter(run_id=run_id).select_related("lesson")
    unique: dict[int, Lesson] = {}
    for source in sources.order_by("created_at", "id"):
        unique.setdefault(source.lesson_id, source.lesson)
    return list(unique.values())


# --- counters -------------------------------------------------------------------------------

def lessons_mark_retrieved(*, lesson_ids: Sequence[int]) -> None:
    """Count that these lessons were put into a prompt (each at most once per call)."""
    Lesson.objects.filter(pk__in=set(lesson_ids)).update(retrieved_count=F("retrieved_count") + 1)


def lessons_record_outcome(*, lesson_ids: Sequence[int] = (), helped: bool | None = None,
                           run_id: int | None = None, summary: RunSummary | None = None) -> None:
    """Move each lesson's helped or not-helped counter once.

    With `run_id` the outcome counts once per (lesson, run), so a retried end-of-run step does
    not count twice. `summary=` is shorthand for the lessons a finished run used: helped when
    the run succeeded.
    """
    if summary is not None:
        lesson_ids, helped, run_id = summary.lessons_used, summary.succeeded, summary.run_id
    if helped is None:
        raise LessonInputError("say whether the lessons helped (helped=True/False)")
    ids = set(Lesson.objects.filter(pk__in=set(lesson_ids)).values_list("pk", flat=True))
    field = "helped_count" if helped else "not_helped_count"
    with transaction.atomic():
        if run_id is not None:
            ids = {lesson_id for lesson_id in sorted(ids) if LessonOutcome.objects.get_or_create(
                lesson_id=lesson_id, run_id=run_id, defaults={"helped": helped})[1]}
        Lesson.objects.filter(pk__in=ids).update(**{field: F(field) + 1})


# --- curation (the pages) -------------------------------------------------------------------

def lesson_update(*, lesson: Lesson, actor: User, title: str, avoidance_rule: str,
                  resolution: str = "", failed_approach: str = "", task_context: str = "",
                  error_signature: str = "", tags: Iterable[str] = (),
                  kind: str | None = None) -> Lesson:
    """Change a lesson's text; it is embedded again so retrieval follows the new wording."""
    _require(can_curate(actor, lesson), "edit")
    if kind is not None and kind not in Lesson.Kind.values:
        raise LessonInputError(f"kind must be one of {', '.join(Lesson.Kind.values)}")
    lesson.kind = kind or lesson.kind
    lesson.title = _text(title, "title", required=True, limit=MAX_TITLE_CHARS)
    lesson.avoidance_rule = _text(avoidance_rule, "avoidance rule", required=True)
    lesson.resolution = _text(resolution, "resolution")
    lesson.failed_approach = _text(failed_approach, "failed approach")
    lesson.task_context = _text(task_context, "task context")
    lesson.error_signature = _text(error_signature, "error signature", limit=300)
    lesson.tags = list(clean_tags(tags))
    lesson.embedding, lesson.embedded_with = _vector_for(lesson), embedder_identity()
    lesson.save()
    logger.info("lesson %s edited by %s", lesson.pk, actor)
    return lesson


def lesson_retire(*, lesson: Lesson, actor: User) -> Lesson:
    """Stop retrieving a lesson (kept for the record); retiring twice changes nothing."""
    _require(can_curate(actor, lesson), "retire")
    now = timezone.now()
    Lesson.objects.filter(pk=lesson.pk, retired_at__isnull=True).update(retired_at=now,
                                                                         updated_at=now)
    lesson.refresh_from_db()
    return lesson


def lesson_restore(*, lesson: Lesson, actor: User) -> Lesson:
    _require(can_curate(actor, lesson), "restore")
    Lesson.objects.filter(pk=lesson.pk, retired_at__isnull=False).update(
        retired_at=None, updated_at=timezone.now())
    lesson.refresh_from_db()
    return lesson


def lesson_promote(*, lesson: Lesson, actor: User) -> Lesson:
    """Make a team lesson global: every team retrieves it and staff curate it from now on."""
    _require(can_promote(actor, lesson), "promote")
    if lesson.team_id is None:
        raise LessonInputError("the lesson is global already")
    changed = Lesson.objects.filter(pk=lesson.pk, team_id=lesson.team_id).update(
        team=None, updated_at=timezone.now())
    if not changed:
        raise LessonInputError("the lesson changed meanwhile; reload and try again")
    logger.info("lesson %s promoted to global by %s", lesson.pk, actor)
    lesson.refresh_from_db()
    return lesson
