"""Published plugin versions a team has activated as tools, and what using them leaves behind.

An activation is the team's approval gate for running a version with the team's settings and
data: a team admin decides it (runs/approval_rules.py says who). Settings, storage, API
tokens and schedules belong to the team and the plugin, not to one version, so upgrading or
rolling back keeps them. A site admin's kill switch is a `VersionBlock` row, checked at every
call.
"""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone

from autocoder.sealing import sealed_column_register


class Activation(models.Model):
    """One decision to use one version of a plugin in one team (or a request for it)."""

    class Status(models.TextChoices):
        PENDING = "pending", "Waiting for a team admin"
        ACTIVE = "active", "Active"
        REFUSED = "refused", "Refused"
        # Replaced by a later activation (an upgrade or a roll-back) or switched off.
        RETIRED = "retired", "No longer in use"

    team = models.ForeignKey("teams.Team", on_delete=models.CASCADE, related_name="+")
    plugin = models.ForeignKey("marketplace.Plugin", on_delete=models.PROTECT, related_name="+")
    version = models.ForeignKey("marketplace.PluginVersion", on_delete=models.PROTECT,
                                related_name="+")
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.PENDING)
    # The activation that was in force when this one was asked for: what the diff compares
    # with, and what a roll-back returns to.
    previous = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL,
                                 related_name="+")
    rollback = models.BooleanField(default=False, help_text="A return to an earlier version.")
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                     on_delete=models.SET_NULL, related_name="+")
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")
    comment = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    retired_at = models.DateTimeField(null=True, blank=True)
    # Calls may run in a warm sandbox kept for this team and version (docs/sandbox.md, "Warm
    # sandboxes"); a team admin can turn it off; upgrades and roll-backs keep the choice.
    warm_sandbox = models.BooleanField(
        default=True, help_text="Calls start in a sandbox kept ready for this team's version.")

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            # One version in use per team and plugin: a second approval racing the first fails.
            models.UniqueConstraint(fields=["team", "plugin"], condition=models.Q(status="active"),
                                    name="one_active_tool_per_team"),
            models.UniqueConstraint(fields=["team", "version"],
                                    condition=models.Q(status="pending"),
                                    name="one_pending_activation_per_version"),
        ]
        indexes = [models.Index(fields=["version", "status"], name="activation_version_status")]

    def __str__(self) -> str:
        # Read in the audit log ("alice activated month-totals 1.0.0."): names, not ids.
        return f"{self.plugin.name} {self.version.version}"


class ApprovedAddress(models.Model):
    """A host an address setting names (`kind = "address"` in plugin.toml), approved by a team
    admin for one activation: that activation's api.http may reach it while the setting still
    names it (docs/safety.md, "Hosts a version may reach"). Also in the audit log."""

    activation = models.ForeignKey(Activation, on_delete=models.CASCADE,
                                   related_name="approved_addresses")
    setting = models.CharField(max_length=64)
    host = models.CharField(max_length=300, help_text="As plugin.toml would write it.")
    approved_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                    on_delete=models.SET_NULL, related_name="+")
    approved_at = models.DateTimeField()

    class Meta:
        ordering = ["setting", "approved_at"]
        constraints = [models.UniqueConstraint(fields=["activation", "setting", "host"],
                                               name="one_approval_per_address")]

    def __str__(self) -> str:
        return f"{self.host} ({self.setting}) for activation {self.activation_id}"


class ToolSetting(models.Model):
    """A value a plugin declares in plugin.toml (`[[settings]]`), entered by a team admin.

    A secret is stored sealed (autocoder/sealing.py) and never shown again; `value` of a
    secret is the sealed text."""

    team = models.ForeignKey("teams.Team", on_delete=models.CASCADE, related_name="+")
    plugin = models.ForeignKey("marketplace.Plugin", on_delete=models.CASCADE, related_name="+")
    name = models.CharField(max_length=64)
    value = models.TextField(blank=True)
    secret = models.BooleanField(default=False)
    updated_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["team", "plugin", "name"],
                                               name="one_tool_setting_per_name")]

    def __str__(self) -> str:
        return f"{self.name} of {self.plugin.name}"


# A secret's sealed text, sealed again under a new SECRET_KEY by `manage.py secrets_reseal`.
sealed_column_register("tools.ToolSetting", "value", secret=True)


class ToolStorage(models.Model):
    """The plugin's small key-value store for one team (`api.storage`): never shared."""

    team = models.ForeignKey("teams.Team", on_delete=models.CASCADE, related_name="+")
    plugin = models.ForeignKey("marketplace.Plugin", on_delete=models.CASCADE, related_name="+")
    data = models.JSONField(default=dict)
    size = models.PositiveIntegerField(default=0, help_text="Bytes of JSON.")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["team", "plugin"],
                                               name="one_tool_storage_per_team")]

    def __str__(self) -> str:
        return f"the storage of {self.plugin.name} ({self.size} bytes)"


class ToolToken(models.Model):
    """A team's API token for one plugin, or for all of the team's tools (`plugin` None: an
    assistant over MCP, docs/tools.md). Only a SHA-256 is stored (marketplace's token_hash:
    256-bit random tokens need no slow hash)."""

    team = models.ForeignKey("teams.Team", on_delete=models.CASCADE, related_name="+")
    plugin = models.ForeignKey("marketplace.Plugin", on_delete=models.CASCADE, related_name="+",
                               null=True, blank=True)
    name = models.CharField(max_length=80)
    prefix = models.CharField(max_length=12)
    token_hash = models.CharField(max_length=64, unique=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}...)"


class Schedule(models.Model):
    """A command with an input (which may hold period placeholders), run on a calendar rule in
    a time zone: the `when` words (tools/services/calendar.py) or a cron expression."""

    team = models.ForeignKey("teams.Team", on_delete=models.CASCADE, related_name="+")
    plugin = models.ForeignKey("marketplace.Plugin", on_delete=models.CASCADE, related_name="+")
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL,
                              related_name="+")
    name = models.CharField(max_length=80)
    command = models.CharField(max_length=64)
    # The input as saved, placeholders ({{last_week.start}}, ...) and all; each run fills them.
    payload = models.JSONField(default=dict)
    # The rhythm: `when` in the words of calendar.py ("weekly mon 08:00"), or, when `cron` is
    # set, that cron expression; both in `time_zone` (an IANA name).
    when = models.CharField(max_length=80, blank=True)
    cron = models.CharField(max_length=120, blank=True)
    time_zone = models.CharField(max_length=64, default="UTC")
    enabled = models.BooleanField(default=True)
    # Why a schedule that is not enabled was paused, in words for the tool's page (its owner
    # left the team, ...).
    paused_reason = models.CharField(max_length=200, blank=True)
    next_run_at = models.DateTimeField()
    last_run_at = models.DateTimeField(null=True, blank=True)
    # Set by a failure, cleared by a success: the owner is told once per run of failures.
    failing = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        indexes = [models.Index(fields=["enabled", "next_run_at"], name="schedule_due")]

    def __str__(self) -> str:
        return f"{self.name} ({self.command})"


class Invocation(models.Model):
    """One call of a tool: who or what called it, what went in and out, how it ended."""

    class Caller(models.TextChoices):
        USER = "user", "A person (the form)"
        TOKEN = "token", "An API token"
        SCHEDULE = "schedule", "A schedule"
        # An event the portal delivers to on_event (activated, settings changed, ...): the
        # command column names the event.
        EVENT = "event", "The portal (an event)"
        MCP = "mcp", "An assistant (via MCP)"
        TRIGGER = "trigger", "Another system (a webhook trigger)"

    class Status(models.TextChoices):
        PENDING = "pending", "Waiting for a worker"
        RUNNING = "running", "Running"
        OK = "ok", "Succeeded"
        FAILED = "failed", "Failed"
        REFUSED = "refused", "Refused"

    team = models.ForeignKey("teams.Team", on_delete=models.CASCADE, related_name="+")
    plugin = models.ForeignKey("marketplace.Plugin", on_delete=models.CASCADE, related_name="+")
    version = models.ForeignKey("marketplace.PluginVersion", on_delete=models.CASCADE,
                                related_name="+")
    command = models.CharField(max_length=64)
    caller = models.CharField(max_length=8, choices=Caller.choices)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                             on_delete=models.SET_NULL, related_name="+")
    token = models.ForeignKey(ToolToken, null=True, blank=True, on_delete=models.SET_NULL,
                              related_name="+")
    schedule = models.ForeignKey(Schedule, null=True, blank=True, on_delete=models.SET_NULL,
                                 related_name="+")
    # A schedule's run: the moment it stands for (its periods are computed from it), and what
    # the page says of it when it ran late or stood for missed runs (the catch-up rule).
    scheduled_for = models.DateTimeField(null=True, blank=True)
    schedule_note = models.CharField(max_length=300, blank=True)
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.PENDING)
    # The payload waits here for the worker; output is kept (cut to a size) for the person who
    # asked, so recent results stay with them.
    payload = models.JSONField(default=dict, blank=True)
    output = models.JSONField(null=True, blank=True)
    # The same output as the plugin returned it: jsonb keeps an object's keys in an order of
    # its own, and a person reads them in the plugin's (`output_in_order`).
    output_text = models.TextField(blank=True)
    output_cut = models.BooleanField(default=False)
    error = models.TextField(blank=True)
    error_kind = models.CharField(max_length=24, blank=True)
    input_bytes = models.PositiveIntegerField(default=0)
    output_bytes = models.PositiveIntegerField(default=0)
    duration_ms = models.PositiveIntegerField(default=0)
    plugin_ms = models.PositiveIntegerField(default=0)
    log_lines = models.JSONField(default=list, blank=True)
    # The plugin's api.http requests, as the host made them (autocoder/calling/http_gate.py):
    # method, host, path (query names only), status, bytes, ms, why refused; never a secret.
    http_requests = models.JSONField(default=list, blank=True)
    # When the call was asked for: a call answered in the request is written when it ends
    # (tools/services/invocations.py, `invocation_call`), dated when it began.
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["team", "plugin", "-created_at"], name="invocation_tool_log"),
            models.Index(fields=["version", "status"], name="invocation_version_status"),
            models.Index(fields=["created_at"], name="invocation_created"),
        ]

    def __str__(self) -> str:
        return f"{self.command} of {self.plugin_id} in team {self.team_id} ({self.status})"

    @property
    def output_in_order(self) -> Any:
        """The output with its objects' keys in the order the plugin gave them."""
        if self.output_text:
            try:
                return json.loads(self.output_text)
            except ValueError:
                pass
        return self.output


class VersionBlock(models.Model):
    """The kill switch: a site admin disabled this version everywhere. Checked at every call."""

    version = models.OneToOneField("marketplace.PluginVersion", on_delete=models.CASCADE,
                                   related_name="+")
    reason = models.TextField()
    blocked_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.version} (disabled)"


class ChangeRequest(models.Model):
    """Someone asked for a plugin to behave differently, where they saw the problem (a tool's
    page, a call in its log, a result, the marketplace page). It goes to the team that owns the
    plugin (`team`), which starts a change run from `version` or declines with a reason; the
    asker may belong to another team (`from_team`) using a public plugin."""

    class Status(models.TextChoices):
        OPEN = "open", "Waiting for the plugin's team"
        STARTED = "started", "A change run started"
        DECLINED = "declined", "Declined"
        SHIPPED = "shipped", "Changed: a new version is out"

    team = models.ForeignKey("teams.Team", on_delete=models.CASCADE, related_name="+")
    plugin = models.ForeignKey("marketplace.Plugin", on_delete=models.CASCADE, related_name="+")
    version = models.ForeignKey("marketplace.PluginVersion", on_delete=models.CASCADE,
                                related_name="+")
    asked_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL,
                                 related_name="+")
    from_team = models.ForeignKey("teams.Team", on_delete=models.CASCADE, related_name="+")
    description = models.TextField(help_text="What should be different, in the asker's words.")
    keep = models.TextField(blank=True, help_text="What must stay as it is.")
    # [{"command", "input", "got", "failed", "expected"?}]: "got" is the output, or the error's
    # words when "failed"; "expected" (any JSON, or plain text) only when someone said it.
    cases = models.JSONField(default=list, blank=True)
    invocation = models.ForeignKey(Invocation, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.OPEN)
    project = models.ForeignKey("runs.Project", null=True, blank=True, on_delete=models.SET_NULL,
                                related_name="+")
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")
    decline_reason = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    shipped_at = models.DateTimeField(null=True, blank=True)

    class FollowUp(models.TextChoices):
        """The short follow-up interview (tools/services/change_questions.py)."""

        NONE = "", "Not asked"
        READING = "reading", "The analyst is reading the request"
        ASKED = "asked", "Questions for the asker"
        WRITING = "writing", "Writing the change spec from the answers"
        DONE = "done", "Change spec written"
        NO_MODEL = "no_model", "No model is set up"
        UNREACHABLE = "unreachable", "The model did not answer"

    follow_up = models.CharField(max_length=12, choices=FollowUp.choices, blank=True,
                                 default=FollowUp.NONE)
    # [{"text", "assumption", "answer"}]: at most three; "answer" "" means the assumption holds.
    questions = models.JSONField(default=list, blank=True)
    answered_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                    on_delete=models.SET_NULL, related_name="+")
    answered_at = models.DateTimeField(null=True, blank=True)
    # The change spec, in plain words ("" until written: the request's own words stand).
    spec_change = models.TextField(blank=True)
    spec_keep = models.TextField(blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["team", "status"], name="change_request_team_status"),
                   models.Index(fields=["from_team", "-created_at"],
                                name="change_request_from_team")]

    def __str__(self) -> str:
        return f"change request {self.pk} of {self.plugin_id} ({self.status})"

    @property
    def change_text(self) -> str:
        """What to change: the change spec's words, else the asker's."""
        return self.spec_change or self.description

    @property
    def keep_text(self) -> str:
        """What must stay as it is: the change spec's words, else the asker's."""
        return self.spec_keep or self.keep


class Trigger(models.Model):
    """A command another system starts by sending a signed webhook to the trigger's own address
    (docs/tools.md, "Triggers"). The signing secret is kept sealed (autocoder/sealing.py); the
    event the sender posts goes into the command's input as one field, beside fixed values.
    Set up by a team admin, which is the approval (`approved_by`), and audited."""

    class Scheme(models.TextChoices):
        GITHUB = "github", "GitHub (X-Hub-Signature-256)"
        SLACK = "slack", "Slack (X-Slack-Signature)"
        STRIPE = "stripe", "Stripe (Stripe-Signature)"
        PLAIN = "plain", "Any other system (X-Signature-256)"

    team = models.ForeignKey("teams.Team", on_delete=models.CASCADE, related_name="+")
    plugin = models.ForeignKey("marketplace.Plugin", on_delete=models.CASCADE, related_name="+")
    name = models.CharField(max_length=80)
    command = models.CharField(max_length=64)
    scheme = models.CharField(max_length=8, choices=Scheme.choices)
    # The unguessable part of its address, /hooks/<public_id>/.
    public_id = models.CharField(max_length=40, unique=True)
    # Sealed text; "" until an admin enters the sender's (Stripe shows it only once the
    # address is saved there): until then every delivery is refused.
    secret = models.TextField(blank=True)
    event_field = models.CharField(max_length=64, default="event")
    fixed = models.JSONField(default=dict, blank=True)
    paused = models.BooleanField(default=False)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")
    approved_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                    on_delete=models.SET_NULL, related_name="+")
    approved_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # Requests refused before they counted as deliveries (a wrong or missing signature, a
    # stale timestamp): how many, the last one and why, for the admin setting the sender up.
    refused_count = models.PositiveIntegerField(default=0)
    last_refused_at = models.DateTimeField(null=True, blank=True)
    last_refused_reason = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["name", "pk"]

    def __str__(self) -> str:
        return f"{self.name} ({self.command}, {self.scheme})"


sealed_column_register("tools.Trigger", "secret")


class Delivery(models.Model):
    """One signed request a trigger received, what it was answered and the call it started."""

    class Outcome(models.TextChoices):
        STARTED = "started", "Started the command"
        REFUSED = "refused", "Not run"
        PAUSED = "paused", "Not run: the trigger is paused"
        CHECKED = "checked", "The sender checked the address"

    trigger = models.ForeignKey(Trigger, on_delete=models.CASCADE, related_name="deliveries")
    received_at = models.DateTimeField(auto_now_add=True)
    # The sender's id of the delivery (X-GitHub-Delivery, Stripe's event id, ...): "" if none.
    delivery_id = models.CharField(max_length=200, blank=True)
    outcome = models.CharField(max_length=8, choices=Outcome.choices)
    status = models.PositiveSmallIntegerField(help_text="The HTTP status it was answered.")
    reason = models.CharField(max_length=500, blank=True)
    body_bytes = models.PositiveIntegerField(default=0)
    invocation = models.ForeignKey(Invocation, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")

    class Meta:
        ordering = ["-received_at", "-id"]
        indexes = [models.Index(fields=["trigger", "-received_at"], name="delivery_recent")]
        constraints = [
            # A delivery id that started the command once never starts it again (a replay).
            models.UniqueConstraint(fields=["trigger", "delivery_id"],
                                    condition=models.Q(outcome="started")
                                    & ~models.Q(delivery_id=""),
                                    name="one_started_delivery_per_id"),
        ]

    def __str__(self) -> str:
        return f"delivery {self.delivery_id or self.pk} of trigger {self.trigger_id}"
