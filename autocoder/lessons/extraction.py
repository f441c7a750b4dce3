"""Turning a run's reflections into lesson drafts: by the reflector model when one is configured,
by a deterministic summary when not (or when the model's reply is unusable).

Also the one place that decides which text of a lesson is embedded, so extraction, edits and
retrieval agree.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import TypedDict

from autocoder.lessons.types import ReflectionNote, RunSummary
from autocoder.signatures import normalize_error_signature

logger = logging.getLogger(__name__)

MAX_TITLE_CHARS = 200
MAX_TAGS = 8
MAX_TAG_CHARS = 40
# Stored texts are capped so one pathological reflection (a 5 MB log) cannot bloat the table
# or the prompts that quote it.
MAX_FIELD_CHARS = 4000
_EXCEPTION_NAME = re.compile(r"\b([A-Z][A-Za-z0-9]*(?:Error|Exception|Exit|Interrupt|Warning))\b")
_KEYWORD_TAGS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("imports", ("modulenotfounderror", "importerror", "no module named")),
    ("json", ("json",)),
    ("dates", ("datetime", "date ", "weekday", "timezone", "zoneinfo")),
    ("tests", ("assert", "pytest", "test ")),
    ("types", ("typeerror",)),
    ("syntax", ("syntaxerror", "indentationerror")),
    ("timeout", ("timeout", "timed out")),
    ("payload", ("payload",)),
    ("encoding", ("unicode", "encoding", "utf-8")),
)


@dataclass(frozen=True)
class LessonDraft:
    kind: str  # "negative" | "positive"
    iteration: int  # the source iteration; 0 = the run as a whole
    title: str
    task_context: str
    error_signature: str
    failed_approach: str
    resolution: str
    avoidance_rule: str
    tags: tuple[str, ...]
    reflection: str = ""
    error_text: str = ""


def clip(text: str, limit: int) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _first_sentence(text: str, limit: int) -> str:
    text = " ".join((text or "").split())
    match = re.match(r"(.+?[.!?])(?:\s|$)", text)
    return clip(match.group(1) if match else text, limit).rstrip(".")


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:] if text[:1].isupper() and not text[:2].isupper() else text


def clean_tags(tags: Iterable[str]) -> tuple[str, ...]:
    """Lower-case, dash-separated, unique tags, at most MAX_TAGS of MAX_TAG_CHARS each."""
    seen: list[str] = []
    for tag in tags:
        slug = re.sub(r"[^a-z0-9]+", "-", str(tag).lower()).strip("-")[:MAX_TAG_CHARS]
        if slug and slug not in seen:
            seen.append(slug)
    return tuple(seen[:MAX_TAGS])


def _keyword_tags(*texts: str) -> list[str]:
    haystack = " ".join(texts).lower() + " "
    return [tag for tag, needles in _KEYWORD_TAGS if any(n in haystack for n in needles)]


def exception_name(signature: str) -> str | None:
    match = _EXCEPTION_NAME.search(signature or "")
    return match.group(1) if match else None


def error_head(signature: str) -> str:
    match = _EXCEPTION_NAME.search(signature)
    return match.group(1) if match else (clip(signature, 60) or "Failure")


def task_context_for(summary: RunSummary) -> str:
    name = summary.spec_name.strip()
    text = summary.spec_summary.strip()
    return clip(f"{name}: {text}" if name and text else name or text, 600)


def negative_draft(note: ReflectionNote, summary: RunSummary) -> LessonDraft:
    """The deterministic lesson for a reflection whose fix worked in the next iteration."""
    signature = normalize_error_signature(note.error_text)
    head = error_head(signature)
    fix = note.fix_summary.strip() or note.reflection.strip()
    fix_short = _first_sentence(fix, 160)
    failed_short = _first_sentence(note.failed_approach, 160)
    title = f"{head}: {_lower_first(fix_short)}" if fix_short else f"{head} in {summary.spec_name}"
    # The fix leads because it is what to do; the failed approach is quoted, whatever its tense.
    parts = [f'On "{clip(signature, 120)}": ' if signature else ""]
    parts.append(f"{fix_short}." if fix_short else "find the cause before changing code.")
    if failed_short:
        parts.append(f" Do not repeat what failed: {_lower_first(failed_short)}.")
    return LessonDraft(
        kind="negative",
        iteration=max(note.iteration, 0),
        title=clip(title, MAX_TITLE_CHARS),
        task_context=task_context_for(summary),
        error_signature=signature,
        failed_approach=clip(note.failed_approach, MAX_FIELD_CHARS),
        resolution=clip(fix, MAX_FIELD_CHARS),
        avoidance_rule=clip("".join(parts), MAX_FIELD_CHARS),
        tags=clean_tags([head if _EXCEPTION_NAME.search(signature) else "",
                         *_keyword_tags(signature, note.failed_approach, fix)]),
        reflection=clip(note.reflection, MAX_FIELD_CHARS),
        error_text=note.error_text[-MAX_FIELD_CHARS:],
    )


@dataclass(frozen=True)
class FileChange:
    path: str
    created: bool
    deleted: bool
    removed: tuple[str, ...]
    added: tuple[str, ...]


def diff_changes(diff: str) -> list[FileChange]:
    """Per file of a unified diff (autocoder.engine.replies.unified_diff), the non-blank lines
    it removed and added; code files first, tests last (the fix is usually in the code)."""
    changes: list[FileChange] = []
    for block in re.split(r"^diff --git ", diff or "", flags=re.M)[1:]:
        head, _, body = block.partition("\n")
        lines = body.splitlines()
        path = head.split(" b/", 1)[-1].strip()
        changes.append(FileChange(
            path=path, created=any(line.startswith("new file mode") for line in lines[:2]),
            deleted=any(line.startswith("deleted file mode") for line in lines[:2]),
            removed=_changed(lines, "-"), added=_changed(lines, "+")))
    return sorted(changes, key=lambda c: (c.path.startswith("tests/"), c.path))


def _changed(lines: list[str], sign: str) -> tuple[str, ...]:
    return tuple(line[1:].strip() for line in lines
                 if line.startswith(sign) and not line.startswith(sign * 3) and line[1:].strip())


MAX_QUOTED_LINES = 3
MAX_DESCRIBED_FILES = 2
MAX_NAMED_TESTS = 3


def _quote(lines: tuple[str, ...]) -> str:
    shown = " / ".join(clip(line, 120) for line in lines[:MAX_QUOTED_LINES])
    return f"`{shown}`" + (f" (and {len(lines) - MAX_QUOTED_LINES} more lines)"
                           if len(lines) > MAX_QUOTED_LINES else "")


def _describe(change: FileChange) -> str:
    if change.created:
        return f"create {change.path}"
    if change.deleted:
        return f"delete {change.path}"
    if change.removed and change.added:
        return f"in {change.path} replace {_quote(change.removed)} with {_quote(change.added)}"
    if change.added:
        return f"in {change.path} add {_quote(change.added)}"
    return f"in {change.path} remove {_quote(change.removed)}"


def change_summary(diff: str) -> str:
    """The change a diff made, in words a later prompt can follow ("" for an empty diff)."""
    changes = diff_changes(diff)
    parts = [_describe(c) for c in changes[:MAX_DESCRIBED_FILES]]
    more = len(changes) - MAX_DESCRIBED_FILES
    return "; ".join(parts) + (f" (and {more} more files)" if more > 0 else "")


def _tests_text(nodeids: tuple[str, ...]) -> str:
    names = [nodeid.rsplit("::", 1)[-1] for nodeid in nodeids]
    shown = ", ".join(names[:MAX_NAMED_TESTS])
    more = len(names) - MAX_NAMED_TESTS
    return shown + (f" and {more} more" if more > 0 else "")


def facts_draft(note: ReflectionNote, summary: RunSummary) -> LessonDraft:
    """The lesson for a fixed mistake nobody reflected on: built only from what is known, the
    failing tests, the normalised error and the change that fixed it."""
    signature = normalize_error_signature(note.error_text)
    head = error_head(signature)
    changes = diff_changes(note.fix_diff)
    fix = change_summary(note.fix_diff) or note.fix_summary.strip()
    tests = _tests_text(note.failing_tests)
    where = f" in {tests}" if tests else ""
    failed = note.failed_approach.strip() or "; ".join(
        f"{c.path} had {_quote(c.removed)}" for c in changes if c.removed and not c.deleted)
    when = f"If {tests or 'the tests'} fail" + (f' with "{clip(signature, 120)}"'
                                                 if signature else "")
    return LessonDraft(
        kind="negative", iteration=max(note.iteration, 0),
        title=clip(f"{head}{where}: {fix}", MAX_TITLE_CHARS),
        task_context=task_context_for(summary), error_signature=signature,
        failed_approach=clip(failed, MAX_FIELD_CHARS),
        resolution=clip(fix[:1].upper() + fix[1:], MAX_FIELD_CHARS),
        avoidance_rule=clip(f"{when}: {fix}.", MAX_FIELD_CHARS),
        tags=clean_tags([head if _EXCEPTION_NAME.search(signature) else "",
                         *_keyword_tags(signature, failed, fix)]),
        error_text=note.error_text[-MAX_FIELD_CHARS:],
    )


def positive_draft(summary: RunSummary) -> LessonDraft:
    """The deterministic lesson for the approach that made a run succeed."""
    approach = summary.final_approach.strip()
    approach_short = _first_sentence(approach, 160)
    rule = (f'For a task like "{clip(summary.spec_summary or summary.spec_name, 160)}", '
            f"this approach passed every test: {_lower_first(approach_short)}.")
    return LessonDraft(
        kind="positive",
        iteration=max(summary.final_iteration or 0, 0),
        title=clip(f"Worked for {summary.spec_name}: {_lower_first(approach_short)}",
                    MAX_TITLE_CHARS),
        task_context=task_context_for(summary),
        error_signature="",
        failed_approach="",
        resolution=clip(approach, MAX_FIELD_CHARS),
        avoidance_rule=clip(rule, MAX_FIELD_CHARS),
        tags=clean_tags(["approach", *_keyword_tags(approach, summary.spec_summary)]),
    )


def drafts_for_run(summary: RunSummary) -> list[LessonDraft]:
    """Deterministic drafts: one per mistake that was fixed (from its reflection, or from the
    facts when nobody reflected on it), one for a successful end."""
    drafts = [negative_draft(note, summary) if note.reflection.strip() or not note.fix_diff
              else facts_draft(note, summary) for note in summary.reflections
              if note.fixed_by_next and (note.error_text.strip() or note.fix_summary.strip())]
    if summary.succeeded and summary.final_approach.strip():
        drafts.append(positive_draft(summary))
    return drafts


# --- the reflector's help -------------------------------------------------------------------

REFLECTOR_SYSTEM = (
    "You turn one episode of an automated code-generation run into a reusable lesson for future "
    "runs. Reply with one JSON object and nothing else: "
    '{"title": "at most 80 characters", '
    '"avoidance_rule": "one or two imperative sentences a programmer can follow without seeing '
    'this run", "tags": ["up to 5 short lower-case words"]}.'
)


def _reflector_prompt(draft: LessonDraft) -> str:
    if draft.kind == "negative":
        return (f"Task: {draft.task_context}\nError signature: {draft.error_signature}\n"
                f"Error text (end):\n{draft.error_text[-1500:]}\n"
                f"Failed approach: {clip(draft.failed_approach, 1500)}\n"
                f"Reflection: {clip(draft.reflection, 1500)}\n"
                f"What fixed it in the next iteration: {clip(draft.resolution, 1500)}")
    return (f"Task: {draft.task_context}\nThe run succeeded with this approach:\n"
            f"{clip(draft.resolution, 3000)}\nWrite the lesson as advice for similar tasks.")


class ReflectorWords(TypedDict):
    """What the reflector words of a lesson (its reply, checked)."""
    title: str
    avoidance_rule: str
    tags: list[str]


def _parse_reply(text: str) -> ReflectorWords:
    match = re.search(r"\{.*\}", text or "", re.DOTALL)
    if not match:
        raise ValueError("no JSON object in the reflector's reply")
    data = json.loads(match.group(0))
    title, rule = data.get("title"), data.get("avoidance_rule")
    if not isinstance(title, str) or not title.strip():
        raise ValueError("reply lacks a title")
    if not isinstance(rule, str) or not rule.strip():
        raise ValueError("reply lacks an avoidance_rule")
    tags = data.get("tags") or []
    if not isinstance(tags, list):
        raise ValueError("tags is not a list")
    return {"title": title, "avoidance_rule": rule, "tags": [str(t) for t in tags]}


def refine_with_reflector(draft: LessonDraft, reflector: object | None) -> LessonDraft:
    """Let the reflector word title, rule and tags; any failure keeps the deterministic draft."""
    if reflector is None:
        return draft
    from autocoder.llm.types import Message

    messages = [Message(role="system", content=REFLECTOR_SYSTEM),
                Message(role="user", content=_reflector_prompt(draft))]
    try:
        reply = reflector.complete(messages, role="reflector")  # type: ignore[attr-defined]
        parsed = _parse_reply(reply.text)
    except Exception as exc:  # a provider can fail in any way; the lesson must still be written
        logger.info("reflector summary unusable, keeping the deterministic lesson: %s", exc)
        return draft
    return replace(
        draft,
        title=clip(parsed["title"], MAX_TITLE_CHARS),
        avoidance_rule=clip(parsed["avoidance_rule"], MAX_FIELD_CHARS),
        tags=clean_tags([*parsed["tags"], *draft.tags]),
    )


# --- embedded text --------------------------------------------------------------------------

def embedding_text(*, kind: str, title: str, error_signature: str, avoidance_rule: str,
                   resolution: str, failed_approach: str, task_context: str) -> str:
    """What is embedded for a lesson, most telling parts first (MiniLM reads 256 word pieces).

    The task context is left out of mistakes: with it, two different mistakes made on the same
    task looked more alike (0.79) than one mistake made on two tasks (0.68), on real pairs.
    For an approach that worked, the kind of task is the point, so it stays.
    """
    label = "Mistake" if kind == "negative" else "Approach that worked"
    lines = [f"{label}: {clip(title, 200)}"]
    if error_signature:
        lines.append(f"Error: {clip(error_signature, 200)}")
    if failed_approach:
        lines.append(f"Failed approach: {clip(failed_approach, 300)}")
    if resolution:
        lines.append(f"Fix: {clip(resolution, 300)}")
    lines.append(f"Rule: {clip(avoidance_rule, 400)}")
    if kind == "positive" and task_context:
        lines.append(f"Task: {clip(task_context, 300)}")
    return "\n".join(lines)


def draft_embedding_text(draft: LessonDraft) -> str:
    return embedding_text(kind=draft.kind, title=draft.title,
                          error_signature=draft.error_signature,
                          avoidance_rule=draft.avoidance_rule, resolution=draft.resolution,
                          failed_approach=draft.failed_approach, task_context=draft.task_context)


def identity_text(*, kind: str, error_signature: str, failed_approach: str,
                  resolution: str) -> str:
    """What makes two lessons the same lesson: the mistake and its fix, or the approach itself.

    Compared only to decide merges. The embedded text is not used for that: for approaches it
    carries the task, and two different approaches to one task scored 0.69-0.77 there, above
    the same approach on two tasks (0.66).
    """
    if kind == "positive":
        return f"Approach: {clip(resolution, 600)}"
    return (f"Error: {clip(error_signature, 200)}\nFailed approach: {clip(failed_approach, 400)}\n"
            f"Fix: {clip(resolution, 400)}")


QUERY_CONTEXT_LINES = 12


def query_text(query: str) -> str:
    """A retrieval query. An error text leads with its normalised last line (the error itself),
    which a long traceback would otherwise push past the model's 256-token window, followed by
    its last lines with paths, numbers and values stripped: a run's directory names (its
    plugin's name) made lessons of that task outrank the lesson about the same mistake."""
    lines = [line.strip() for line in (query or "").splitlines() if line.strip()]
    if len(lines) <= 1:
        return clip(query, 1500)
    tail = [normalize_error_signature(line) for line in lines[-QUERY_CONTEXT_LINES:-1]]
    return clip(f"Error: {normalize_error_signature(query)}\n" + "\n".join(tail), 1500)
