"""A step of the loop (`Step`: the run, its history, its spec, its model calls) and the reads
every phase shares: the code the next change applies to, what a role is shown, the failures of
the last iteration.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from django.conf import settings

from autocoder.engine.changing import base_of, base_version, regression_path, start_files
from autocoder.engine.escapes import ESCAPES
from autocoder.engine.llm_port import ModelCalls
from autocoder.engine.pending import Pending
from autocoder.engine.prompting import PromptContext
from autocoder.engine.scaffold import ACCEPTANCE_TEST_PATH, scaffold_files
from autocoder.engine.spec import Spec
from autocoder.engine.states import Checkpoint, RunHistory, RunView


def setting(name: str, default: Any) -> Any:
    """An ENGINE_* (or other) setting, `default` where settings.py sets none."""
    return getattr(settings, name, default)


@dataclass
class Step:
    run: RunView
    team_id: int
    history: RunHistory
    spec: Spec
    llm: ModelCalls
    cancelled: Callable[[], bool]

    @property
    def number(self) -> int:
        """The iteration this step works on (checkpoints exist up to run.iteration)."""
        return self.run.iteration + 1

    @property
    def pending(self) -> Pending:
        """A copy of the step state (the phases change theirs; the run keeps its own)."""
        return cast(Pending, dict(self.run.pending or {}))


def latest_checkpoint(step: Step) -> Checkpoint | None:
    return step.history.latest()


def current_files(step: Step) -> dict[str, str]:
    """The code the next change applies to: the latest checkpoint's, or after reset_context
    the best code so far (a fresh start should not inherit the state that got stuck)."""
    best = step.history.best() if step.run.escape_in_force == "reset_context" else None
    if best is not None:
        return dict(best.files)
    latest = latest_checkpoint(step)
    return dict(latest.files) if latest is not None else starting_files(step)


def starting_files(step: Step) -> dict[str, str]:
    """The first iteration's files: the scaffold's, or for a change run the files of the
    version in use with the new regression tests (autocoder/engine/changing.py)."""
    base = base_of(step.run)
    return start_files(step.spec, base) if base else scaffold_files(step.spec)


def diff_base(step: Step) -> dict[str, str]:
    """What an iteration's diff is against: the code it started from, and for the first
    iteration of a change run the version in use (the reviewer sees the fix and the new
    tests, not the whole plugin)."""
    base = base_of(step.run)
    if base and latest_checkpoint(step) is None:
        return base
    return current_files(step)


def prompt_context(step: Step, *, files: dict[str, str], failures: str = "",
                   replanning: bool = False) -> PromptContext:
    """What a role is shown. When the architect re-plans, the plan in force is one of the
    approaches to move away from, not the plan to follow."""
    run, pending = step.run, step.pending
    escape = run.escape_in_force if run.escape_in_force in ESCAPES[:3] else ""
    approaches: list[str] = []
    if escape == "try_alternative":
        approaches = list(run.approaches)
        if replanning and run.plan and run.plan not in approaches:
            approaches.append(run.plan)
    return PromptContext(
        spec=step.spec, iteration=step.number, plan="" if approaches and replanning else run.plan,
        files=files,
        failures="" if escape == "reset_context" else failures,
        earlier_approaches=approaches,
        lessons=pending.get("lessons", "") if run.use_lessons else "",
        guidance=run.guidance, escape=escape, examples_path=examples_path(step),
        base_version=base_version(run) if base_of(run) else "",
    )


def examples_path(step: Step) -> str:
    """The tests the request's examples are: the acceptance tests, or in a change run the
    regression tests it added (autocoder/engine/changing.py)."""
    base = base_of(step.run)
    return regression_path(base) if base else ACCEPTANCE_TEST_PATH


def failures_for_prompt(checkpoint: Checkpoint | None) -> str:
    """What went wrong last time, with its reflection, as one text for the next prompt."""
    if checkpoint is None:
        return ""
    text = "\n\n".join(checkpoint.failures)
    if checkpoint.reflection:
        text += f"\n\nReflection on attempt {checkpoint.number}:\n{checkpoint.reflection}"
    return text.strip()


def budget_chars(step: Step | None = None, role: str = "") -> int:
    """The most characters `role`'s prompt may have: ENGINE_PROMPT_BUDGET_CHARS, or less where
    the model's context window must keep the reply's room beside it (docs/llm.md, "Reply
    caps")."""
    chosen = int(setting("ENGINE_PROMPT_BUDGET_CHARS", 24000))
    room = step.llm.prompt_chars(role) if step is not None and role else None
    return chosen if room is None else min(chosen, room)
