"""Projects and their generation runs, with the runs' durable state (checkpoints, loop events,
LLM calls, approval requests and their votes, the step outbox).

A project is what a team asked for (the interview's spec) and where it stands on the board; its
status follows its runs (runs/services/project_status.py writes it, and only there). Its
interview, comments and pages are the portal's (projects/).

A run is a state machine advanced one step at a time by workers; every field a resumed worker
needs lives on these rows, never in process memory. The tables keep the names they had when
these models lived in the projects app ("projects_run", "projects_project", ...): the moves
changed no table.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from autocoder.engine import states


class Project(models.Model):
    class Status(models.TextChoices):
        INTERVIEWING = "interviewing", "Interviewing"
        QUEUED = "queued", "Queued"
        GENERATING = "generating", "Generating"
        AWAITING_APPROVAL = "awaiting_approval", "Awaiting approval"
        SUCCEEDED = "succeeded", "Succeeded"
        PUBLISHED = "published", "Published"
        ESCALATED = "escalated", "Escalated"
        FAILED = "failed", "Failed"

    team = models.ForeignKey("teams.Team", on_delete=models.CASCADE, related_name="projects")
    requester = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="requested_projects"
    )
    name = models.CharField(max_length=120)
    spec = models.JSONField(default=dict, blank=True, help_text="The interview's result (spec).")
    status = models.CharField(max_length=24, choices=Status.choices, default=Status.INTERVIEWING)
    # Position on the board's queue column; 0 once the project has left the queue.
    queue_position = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    status_changed_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "projects_project"
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["team", "status"], name="project_team_status")]

    def __str__(self) -> str:
        return self.name


class Run(models.Model):
    # The loop's words (autocoder/engine/states.py), so both sides name states alike.
    Status = states.RunStatus

    # The groups of statuses, each defined here once (every other module uses these):
    # finished: the run never moves again;
    TERMINAL = frozenset({Status.SUCCEEDED, Status.FAILED, Status.ABORTED, Status.CANCELLED})
    # finished without success: failed, aborted (by the loop or a person) or cancelled;
    UNSUCCESSFUL = TERMINAL - {Status.SUCCEEDED}
    # waiting for a person (held: for the installation): no step is queued or executing, a
    # human (or resume, or the release of a hold) must act;
    WAITING = frozenset({Status.PAUSED, Status.AWAITING_APPROVAL, Status.ESCALATED, Status.HELD})
    # at a gate: waiting for a reviewer's decision (a subset of WAITING);
    AT_GATE = frozenset({Status.AWAITING_APPROVAL, Status.ESCALATED})
    # active: a step is queued or executing (the only statuses a step is claimed or sent in).
    ACTIVE = frozenset({Status.QUEUED, Status.RUNNING})

    Phase = states.Phase

    Autonomy = states.Autonomy

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="runs")
    status = models.CharField(max_length=24, choices=Status.choices, default=Status.QUEUED)
    provider = models.CharField(max_length=40, default="scripted")
    # Scripted replies travel with the run so any worker can resume it at the same position.
    script = models.JSONField(null=True, blank=True)
    script_position = models.JSONField(default=dict, blank=True)
    autonomy = models.CharField(max_length=8, choices=Autonomy.choices, default=Autonomy.SEMI)
    use_lessons = models.BooleanField(default=True)

    max_iterations = models.PositiveIntegerField(default=10)
    max_tokens = models.PositiveIntegerField(default=200_000)
    max_wall_s = models.PositiveIntegerField(default=3600)

    iteration = models.PositiveIntegerField(default=0, help_text="Last completed iteration.")
    tokens_prompt = models.PositiveIntegerField(default=0)
    tokens_completion = models.PositiveIntegerField(default=0)
    # What the calls cost in the site's currency (COST_CURRENCY), each priced when it was made
    # (autocoder.llm.pricing); tokens of models without a price are counted apart.
    cost = models.DecimalField(max_digits=14, decimal_places=6, default=0)
    tokens_unpriced = models.PositiveIntegerField(default=0)
    # What the run may cost (the team's run budget when it started, raised each time an admin
    # lets it spend more); null: no limit. `budget_warned`: its admins heard it is nearly spent.
    budget = models.DecimalField(max_digits=14, decimal_places=6, null=True, blank=True)
    budget_warned = models.BooleanField(default=False)

    phase = models.CharField(max_length=16, choices=Phase.choices, default=Phase.PLAN)
    # The message allowed to perform the next step; a message with another token is stale.
    step_token = models.CharField(max_length=40, blank=True)
    step_attempts = models.PositiveSmallIntegerField(default=0)
    # Outputs of the current iteration's finished phases (files, reports) until its checkpoint.
    pending = models.JSONField(default=dict, blank=True)

    plan = models.TextField(blank=True)
    approaches = models.JSONField(default=list, blank=True, help_text="Earlier plans, in order.")
    guidance = models.TextField(blank=True, help_text="What humans told the loop.")
    best_iteration = models.ForeignKey(
        "runs.Iteration", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    cancel_requested = models.BooleanField(default=False)
    pause_requested = models.BooleanField(default=False)
    escapes_tried = models.JSONField(default=list, blank=True)
    escape_in_force = models.CharField(max_length=24, blank=True)
    escalations_answered = models.PositiveSmallIntegerField(default=0)
    since_iteration = models.PositiveIntegerField(default=0, help_text="Detector window start.")
    lessons_written = models.PositiveIntegerField(default=0)
    # Time spent waiting for people does not count against the wall-time budget.
    waiting_since = models.DateTimeField(null=True, blank=True)
    waited_s = models.FloatField(default=0.0)

    # A change run (runs/services/changes.py) starts from the version of the plugin in use:
    # its files and number; its note says whether the new tests failed on that version.
    base_files = models.JSONField(default=dict, blank=True)
    base_version = models.CharField(max_length=40, blank=True)
    base_note = models.TextField(blank=True)
    # The change request says behaviour changes: the version's tests may change with it (each
    # test removed or weakened is still a reason for a person to look).
    base_tests_may_change = models.BooleanField(default=False)

    error = models.TextField(blank=True)
    # Who started (or retried) the run: treated like the project's author at its gates, so they
    # cannot approve what they set going on their own (runs.approval_rules.gate_authorship).
    started_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")
    # While HELD: which part of the installation it waits for (see autocoder/installation.py).
    held_by = models.CharField(max_length=16, blank=True)
    # The worker (its heartbeat id, host:pid) performing the current step; empty while the
    # step waits in the queue. The watchdog re-sends the step when that worker's heartbeat ends.
    claimed_by = models.CharField(max_length=120, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # Moves with every committed step: the watchdog kicks runs whose steps stopped moving.
    updated_at = models.DateTimeField(auto_now=True, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "projects_run"
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"run {self.pk} of {self.project}"

    @property
    def is_terminal(self) -> bool:
        return self.status in self.TERMINAL

    @property
    def tokens_total(self) -> int:
        return self.tokens_prompt + self.tokens_completion

    @property
    def cost_text(self) -> str:
        """The run's cost in the site's currency, or "no price set" for tokens of models
        without a price (autocoder.llm.pricing)."""
        from autocoder.llm.pricing import cost_text

        return cost_text(self.cost, unpriced_tokens=self.tokens_unpriced,
                         tokens=self.tokens_total)


class Iteration(models.Model):
    """A checkpoint: everything one iteration produced, written before the next one starts."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="iterations")
    number = models.PositiveIntegerField()
    files = models.JSONField(default=dict)
    diff = models.TextField(blank=True)
    diff_stats = models.JSONField(default=dict, blank=True)
    rejected_paths = models.JSONField(default=list, blank=True)
    test_report = models.JSONField(default=dict, blank=True)
    pass_rate = models.FloatField(default=0.0)
    acceptance_passed = models.BooleanField(default=False)
    tests_ran = models.BooleanField(default=False)
    succeeded = models.BooleanField(default=False)
    safety_report = models.JSONField(default=dict, blank=True)
    safety_verdict = models.CharField(max_length=8, blank=True)
    # The quality pipeline's stages and score (docs/engine.md, "The quality pipeline"); empty
    # for iterations whose tests did not run, and for those made before the pipeline.
    quality = models.JSONField(default=dict, blank=True)
    quality_score = models.PositiveSmallIntegerField(null=True, blank=True)
    failures = models.JSONField(default=list, blank=True, help_text="What went wrong, for prompts.")
    plan = models.TextField(blank=True)
    reflection = models.TextField(blank=True)
    reply_prose = models.TextField(blank=True)
    lessons_used = models.JSONField(default=list, blank=True)
    tokens = models.PositiveIntegerField(default=0)
    timings = models.JSONField(default=dict, blank=True)
    error_signature = models.CharField(max_length=300, blank=True)
    code_hash = models.CharField(max_length=64, blank=True)
    reply_hash = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "projects_iteration"
        ordering = ["run", "number"]
        constraints = [
            models.UniqueConstraint(fields=["run", "number"], name="unique_iteration_number"),
        ]

    def __str__(self) -> str:
        return f"iteration {self.number} of run {self.run_id}"


class LoopEvent(models.Model):
    """A loop-detector finding and the escape the engine chose for it."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="loop_events")
    iteration = models.PositiveIntegerField()
    type = models.CharField(max_length=40)
    signature = models.TextField(blank=True)
    confidence = models.FloatField(default=0.0)
    occurrences = models.PositiveIntegerField(default=0)
    action = models.CharField(max_length=24)
    reason = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "projects_loopevent"
        ordering = ["run", "id"]

    def __str__(self) -> str:
        return f"{self.type} -> {self.action} (run {self.run_id}, iteration {self.iteration})"


class LLMCall(models.Model):
    """One provider call (cost accounting, and the prompt as sent, for review and tests)."""

    run = models.ForeignKey(
        Run, null=True, blank=True, on_delete=models.CASCADE, related_name="llm_calls"
    )
    iteration = models.PositiveIntegerField(null=True, blank=True)
    role = models.CharField(max_length=16)
    provider = models.CharField(max_length=40)
    model = models.CharField(max_length=120, blank=True)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    # Priced when recorded; null: the model had no price then ("no price set").
    cost = models.DecimalField(max_digits=14, decimal_places=6, null=True, blank=True)
    latency_ms = models.PositiveIntegerField(default=0)
    attempts = models.PositiveSmallIntegerField(default=1)
    error = models.TextField(blank=True)
    messages = models.JSONField(default=list, blank=True)
    reply = models.TextField(blank=True)
    # How the reply ended: "stop", "length" (the model stopped at its cap), "deadline" (the
    # run's time ran out); "" for a failed call and calls recorded before this was kept.
    finish_reason = models.CharField(max_length=16, blank=True)
    # How the reply was asked for: held to the role's schema through a provider option
    # (json_schema, json_object, tool) or "fenced" (docs/llm.md, "Constrained replies").
    reply_form = models.CharField(max_length=16, blank=True)
    # Why the call was made: "" the first ask; "continue" a reply cut at its length limit,
    # "longer" the same ask with more room, "shorter" the same ask for a shorter reply
    # (autocoder/engine/llm_port.py; docs/engine.md, "The reply protocol for files").
    purpose = models.CharField(max_length=12, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "projects_llmcall"
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.role} call via {self.provider}"


class ApprovalRequest(models.Model):
    Kind = states.GateKind

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        APPROVED = "approved", "Approved"
        REJECTED = "rejected", "Rejected"
        CHANGES_REQUESTED = "changes_requested", "Changes requested"
        ANSWERED = "answered", "Answered"
        STALE = "stale", "Stale"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="approvals")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="approvals")
    kind = models.CharField(max_length=12, choices=Kind.choices)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.PENDING)
    iteration = models.PositiveIntegerField(default=0)
    payload = models.JSONField(default=dict, blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="approval_decisions",
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    comment = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "projects_approvalrequest"
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["project", "status"], name="approval_project_status")]

    def __str__(self) -> str:
        return f"{self.kind} approval for run {self.run_id} ({self.status})"


class ApprovalVote(models.Model):
    """One reviewer's decision on one approval request; the gate opens at N approvals."""

    class Decision(models.TextChoices):
        APPROVE = "approve", "Approve"
        REJECT = "reject", "Reject"
        REQUEST_CHANGES = "request_changes", "Request changes"
        ANSWER = "answer", "Answer with guidance"

    request = models.ForeignKey(ApprovalRequest, on_delete=models.CASCADE, related_name="votes")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                             related_name="approval_votes")
    decision = models.CharField(max_length=16, choices=Decision.choices)
    comment = models.TextField(blank=True)
    # Fingerprint of the candidate the reviewer looked at: a vote for an older candidate no
    # longer counts once the loop replaced it (approvals reset on a new iteration).
    candidate = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "projects_approvalvote"
        ordering = ["created_at"]
        constraints = [
            models.UniqueConstraint(fields=["request", "user"], name="unique_vote_per_user"),
        ]

    def __str__(self) -> str:
        return f"{self.user} {self.decision} on {self.request_id}"


class StepOutbox(models.Model):
    """A step message to send (the transactional outbox): written in the transaction that
    makes the step current, deleted once the broker took it. A commit made while Redis is
    down keeps its message here until the sender gets through (after the commit, then the
    workers' watchdog every few seconds). Sending twice is harmless: steps are keyed by token.
    """

    # A run's step (run + token), or any other actor's message (actor + args): the
    # marketplace's upload checks and "Try it" go through the same outbox.
    run = models.ForeignKey(Run, null=True, blank=True, on_delete=models.CASCADE,
                            related_name="+")
    token = models.CharField(max_length=40, blank=True)
    actor = models.CharField(max_length=100, blank=True)
    args = models.JSONField(default=list, blank=True)
    delay_ms = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "projects_stepoutbox"
        ordering = ["id"]

    def __str__(self) -> str:
        if self.actor:
            return f"message {self.actor}{tuple(self.args)}"
        return f"step {self.token} of run {self.run_id}"


class MonthSpend(models.Model):
    """What a team's runs cost in one calendar month, and what its admins allowed beyond the
    monthly budget that month (runs/budgets.py). Added to as each model call is recorded, so
    checking the budget before a step reads one row instead of summing the month's calls."""

    team = models.ForeignKey("teams.Team", on_delete=models.CASCADE, related_name="+")
    month = models.DateField(help_text="The first day of the month.")
    spent = models.DecimalField(max_digits=14, decimal_places=6, default=0)
    extra = models.DecimalField(max_digits=14, decimal_places=6, default=0)
    warned = models.BooleanField(default=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["team", "month"], name="unique_month_spend"),
        ]

    def __str__(self) -> str:
        return f"{self.team_id} spent {self.spent} in {self.month:%Y-%m}"
