"""The step state the loop writes (`Run.pending` is where the runs app keeps it): what the
current iteration's finished phases produced until its checkpoint, what is carried from one
iteration to the next, and the run's outcome once the loop decided it. The loop writes these
keys; the runs app reads a few (runs/pending.py, which imports the types from here).

`Run.pending` is a JSONField, so these types say what is there; they check nothing at run time.
"""

from __future__ import annotations

from typing import Any, TypedDict


class Outcome(TypedDict):
    """How the run ends, decided by the loop or by a reviewer; performed by the learn step."""

    status: str  # a Run.Status of Run.TERMINAL
    reason: str


class BaseCheck(TypedDict):
    """A change run's new tests on the version in use (change_check.py)."""

    note: str  # in words, for the person deciding
    version: str
    path: str
    tests: int
    already_passing: int


class SafetyFinding(TypedDict, total=False):
    """One finding of the safety gate as a report stores it (checking.py writes them)."""

    tool: str
    rule: str
    severity: str
    file: str
    line: int
    message: str


class SafetyReport(TypedDict, total=False):
    verdict: str  # allow | review | block
    findings: list[SafetyFinding]


class Opinion(TypedDict, total=False):
    """The reviewing model's opinion (second_opinion.py), with the iteration it read."""

    verdict: str  # approve | request_changes | unsure
    remarks: str
    iteration: int


class WordsChange(TypedDict, total=False):
    """What a change run's manifest rewrites (change_words.py): [old, new] each."""

    summary: list[str]
    commands: dict[str, list[str]]


class Pending(TypedDict, total=False):
    # Carried from one iteration to the next (CARRIED).
    lesson_ids: list[int]  # the lessons shown to the model
    lessons: str  # their text, as put in the prompts
    # The iteration's work, until its checkpoint.
    files: dict[str, str]  # path -> content of the candidate
    rejected: list[dict[str, str]]  # files the model may not write: {path, reason}
    prose: str  # the model's reply around the files
    reply_hash: str
    no_code: str  # why the reply was not used (no files in it)
    safety: SafetyReport  # the safety gate's report
    report: dict[str, Any]  # the sandboxed tests' report
    quality: dict[str, Any]  # the quality pipeline's stages and score (quality_gate.py)
    required_tests: list[str]  # a change run's tests that must pass (changing.py)
    base_check: BaseCheck  # a change run's new tests on the version in use (change_check)
    permissions_change: dict[str, Any] | None  # {"from", "to"}: Permissions.as_dict()
    words_change: WordsChange | None  # a change run's new summary or descriptions
    cut_replies: list[str]  # the roles whose reply was cut at its cap (prompting.py)
    second_opinion: Opinion  # the reviewing model's opinion, with its "iteration"
    # Milliseconds per phase, and "tokens", until the checkpoint takes them.
    timings: dict[str, int]
    # Set once the run's end is decided; the learn step performs it.
    outcome: Outcome


# The keys a new iteration (or the end of the run) keeps from the last one.
CARRIED = ("lesson_ids", "lessons")


def carried(pending: Pending) -> Pending:
    """Only what a new iteration, or the run's end, carries over from the last one."""
    kept: Pending = {}
    if "lesson_ids" in pending:
        kept["lesson_ids"] = pending["lesson_ids"]
    if "lessons" in pending:
        kept["lessons"] = pending["lessons"]
    return kept


def with_outcome(pending: Pending, status: str, reason: str) -> Pending:
    """`pending` with the run's outcome set: the learn step ends the run so."""
    return {**pending, "outcome": {"status": status, "reason": reason}}
