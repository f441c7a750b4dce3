"""Reads of a run's results: its candidate code, the `generate --json` summary, its prompts,
and the run's past as the loop asks for it (RunTables)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import NotRequired, TypedDict

from runs.models import ApprovalRequest, Iteration, LLMCall, Run


class RunTables:
    """The loop's RunHistory (autocoder/engine/states.py), read from the run's tables."""

    def __init__(self, run: Run) -> None:
        self.run = run

    def checkpoints(self) -> Sequence[Iteration]:
        return list(self.run.iterations.order_by("number"))

    def latest(self) -> Iteration | None:
        return self.run.iterations.order_by("-number").first()

    def best(self) -> Iteration | None:
        return self.run.best_iteration

    def plan_approved(self) -> bool:
        return self.run.approvals.filter(kind=ApprovalRequest.Kind.PLAN,
                                         status=ApprovalRequest.Status.APPROVED).exists()


def run_candidate(run: Run) -> Iteration | None:
    """The code worth keeping: the best tested iteration, else the latest one that the safety
    gate did not block and that holds code from the model. Blocked code is never a candidate."""
    if run.best_iteration_id:
        return run.best_iteration
    usable = run.iterations.exclude(safety_verdict="block").exclude(tests_ran=False)
    return usable.order_by("-number").first()


class LoopEventSummary(TypedDict):
    type: str
    signature: str
    confidence: float
    action: str
    iteration: int


class TokenCounts(TypedDict):
    prompt: int
    completion: int


class ReferenceLoad(TypedDict):
    """How the reference docs' load ended (`generate` adds it)."""

    state: str
    entries: int
    detail: str


class RunSummary(TypedDict):
    """The `generate --json` object (docs/engine.md, "manage.py generate")."""

    run_id: int
    status: str
    iterations: int
    pass_rate: float
    loop_events: list[LoopEventSummary]
    safety_blocks: int
    tokens: TokenCounts
    lessons_written: int
    plugin_dir: str | None
    error: str
    pending_approval: str | None
    reference: NotRequired[ReferenceLoad]


def run_summary(run: Run, *, plugin_dir: str | None = None) -> RunSummary:
    """The `generate --json` object (docs/engine.md, "manage.py generate")."""
    run.refresh_from_db()
    candidate = run_candidate(run)
    events = run.loop_events.order_by("id")
    return {
        "run_id": run.id,
        "status": run.status,
        "iterations": run.iteration,
        "pass_rate": candidate.pass_rate if candidate else 0.0,
        "loop_events": [{"type": e.type, "signature": e.signature, "confidence": e.confidence,
                         "action": e.action, "iteration": e.iteration} for e in events],
        "safety_blocks": run.iterations.filter(safety_verdict="block").count(),
        "tokens": {"prompt": run.tokens_prompt, "completion": run.tokens_completion},
        "lessons_written": run.lessons_written,
        "plugin_dir": plugin_dir,
        "error": run.error,
        "pending_approval": pending_approval_kind(run),
    }


# The steps that come after an attempt is checked (its checkpoint counted in run.iteration).
_AFTER_CHECK = frozenset({Run.Phase.REFLECT, Run.Phase.LEARN, Run.Phase.DONE})


def attempt_in_hand(run: Run) -> int:
    """The number of the attempt the run's next step belongs to, as the pages number them
    ("Attempt 2"): `run.iteration` counts the attempts checked, so planning to verifying
    belong to the next one, reflecting and learning to the one just checked."""
    if run.phase in _AFTER_CHECK:
        return max(run.iteration, 1)
    return run.iteration + 1


def pending_approval(run: Run) -> ApprovalRequest | None:
    return run.approvals.filter(status=ApprovalRequest.Status.PENDING).order_by("-id").first()


def pending_approval_kind(run: Run) -> str | None:
    approval = pending_approval(run)
    return approval.kind if approval else None


def candidate_write(run: Run, directory: Path) -> Path | None:
    """Write the run's candidate files under `directory`; None when there is no candidate."""
    candidate = run_candidate(run)
    if candidate is None:
        return None
    root = directory.resolve()
    for relative, content in candidate.files.items():
        target = (root / relative).resolve()
        # Paths were normalized when the reply was parsed; checked again because this writes to
        # the host's disk.
        if not target.is_relative_to(root):
            raise ValueError(f"refusing to write {relative!r} outside {root}")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
    return root


def run_prompts(run: Run, *, role: str) -> list[LLMCall]:
    """The calls of one role in order, with the messages as sent (review and tests)."""
    return list(run.llm_calls.filter(role=role).order_by("id"))
