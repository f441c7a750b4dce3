"""The words of a run's state machine, and what the loop reads of a run.

The loop (autocoder/engine/loop.py) decides what a step does; the runs app stores runs and
commits steps. The loop never imports the runs app: it names phases, statuses and gate kinds
with the choices below (the runs app's models use the very same ones), and reads a run and its
checkpoints through the small protocols below, which the runs app's models satisfy.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

from django.db import models


class Phase(models.TextChoices):
    PLAN = "plan", "Plan"
    IMPLEMENT = "implement", "Implement"
    TEST_WRITE = "test_write", "Write tests"
    GATE = "gate", "Safety gate"
    SANDBOX = "sandbox", "Run tests"
    VERIFY = "verify", "Verify"
    REFLECT = "reflect", "Reflect"
    LEARN = "learn", "Learn"
    DONE = "done", "Done"


class RunStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    PAUSED = "paused", "Paused"
    AWAITING_APPROVAL = "awaiting_approval", "Awaiting approval"
    # Paused on an escalation: a human's answer (guidance) lets it go on.
    ESCALATED = "escalated", "Escalated"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"
    ABORTED = "aborted", "Aborted"
    CANCELLED = "cancelled", "Cancelled"
    # Stopped by the installation, not by the model or the request (no model set up, a
    # broken plugin runtime or sandbox): it goes on by itself once that part works again.
    HELD = "held", "Waiting for the installation"


class Autonomy(models.TextChoices):
    GUIDED = "guided", "Guided"
    # The wizard's words (projects/interview/checklist.py): one vocabulary on every page.
    SEMI = "semi", "Semi-automatic"
    FULL = "full", "Fully automatic"


class GateKind(models.TextChoices):
    """The kinds of approval request the loop stops at."""

    PLAN = "plan", "Plan"
    CHANGE = "change", "Change"
    ESCALATION = "escalation", "Escalation"
    PUBLISH = "publish", "Publish"
    # Not the loop's: the run reached a money budget of its team (runs/budgets.py).
    BUDGET = "budget", "Budget"


class Checkpoint(Protocol):
    """One iteration's stored result, as the loop reads it."""

    @property
    def number(self) -> int: ...
    @property
    def files(self) -> Any: ...
    @property
    def failures(self) -> Any: ...
    @property
    def reflection(self) -> str: ...
    @property
    def plan(self) -> str: ...
    @property
    def reply_prose(self) -> str: ...
    @property
    def diff(self) -> str: ...
    @property
    def test_report(self) -> Any: ...
    @property
    def pass_rate(self) -> float: ...
    @property
    def succeeded(self) -> bool: ...
    @property
    def tests_ran(self) -> bool: ...
    @property
    def error_signature(self) -> str: ...
    @property
    def code_hash(self) -> str: ...
    @property
    def reply_hash(self) -> str: ...
    @property
    def lessons_used(self) -> Any: ...


class RunView(Protocol):
    """The fields of a run the loop, its budgets and its model calls read."""

    @property
    def id(self) -> int: ...
    @property
    def phase(self) -> str: ...
    @property
    def iteration(self) -> int: ...
    @property
    def pending(self) -> Any: ...
    @property
    def plan(self) -> str: ...
    @property
    def approaches(self) -> Any: ...
    @property
    def guidance(self) -> str: ...
    @property
    def autonomy(self) -> str: ...
    @property
    def use_lessons(self) -> bool: ...
    @property
    def escape_in_force(self) -> str: ...
    @property
    def escapes_tried(self) -> Any: ...
    @property
    def escalations_answered(self) -> int: ...
    @property
    def since_iteration(self) -> int: ...
    @property
    def max_iterations(self) -> int: ...
    @property
    def max_tokens(self) -> int: ...
    @property
    def max_wall_s(self) -> int: ...
    @property
    def tokens_total(self) -> int: ...
    @property
    def started_at(self) -> datetime | None: ...
    @property
    def waited_s(self) -> float: ...
    @property
    def provider(self) -> str: ...
    @property
    def script(self) -> Any: ...
    @property
    def script_position(self) -> Any: ...
    # A change run (autocoder/engine/changing.py): the files and number of the version in
    # use it starts from ({} and "" for a new plugin), and its note on the version's tests.
    @property
    def base_files(self) -> Any: ...
    @property
    def base_version(self) -> str: ...
    @property
    def base_tests_may_change(self) -> bool: ...
    @property
    def base_note(self) -> str: ...


class RunHistory(Protocol):
    """What the loop asks about a run's past (the runs app answers from its tables)."""

    def checkpoints(self) -> Sequence[Checkpoint]:
        """The run's checkpoints, oldest first."""
        ...

    def latest(self) -> Checkpoint | None:
        """The run's latest checkpoint (one row, where the loop needs no more)."""
        ...

    def best(self) -> Checkpoint | None:
        """The best tested checkpoint so far."""
        ...

    def plan_approved(self) -> bool:
        """Whether a person approved one of the run's plans."""
        ...
