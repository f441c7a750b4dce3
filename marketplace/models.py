"""Plugins, their immutable versions and artifacts, reviews, and API tokens for the index.

A plugin belongs to one team and is seen by whom its visibility says (marketplace/visibility.py).
A version is created "pending" by a publish or an upload once every automatic check passed, and
becomes "published" when the publish gate opens; from then on its files, version string and
artifacts never change (a database trigger refuses, see migration 0002). It can only be yanked,
with a reason, which the package index shows and pip honours.
"""

from __future__ import annotations

import functools

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVectorField
from django.db import models
from pgvector.django import VectorField

from autocoder.plugins import PluginManifest, read_manifest

EMBEDDING_DIMENSIONS = 384
# In the catalogue: a published, not yanked version exists.
LISTED = models.Q(latest_version__isnull=False)


class Plugin(models.Model):
    class Visibility(models.TextChoices):
        PRIVATE = "private", "Private (the team's reviewers and admins)"
        TEAM = "team", "Team (every member of the team)"
        PUBLIC = "public", "Public (everyone signed in; pip without a token)"

    class Category(models.TextChoices):
        PRODUCTIVITY = "productivity", "Productivity"
        SCHEDULING = "scheduling", "Scheduling"
        DATA = "data", "Data and spreadsheets"
        TEXT = "text", "Text and documents"
        FINANCE = "finance", "Money and finance"
        COMMUNICATION = "communication", "Communication"
        DEVELOPER = "developer", "Developer tools"
        OTHER = "other", "Other"

    name = models.CharField(max_length=64, help_text="As first published (display form).")
    # PEP 503 normalised: the identity used by the index, URLs and the clash check.
    normalized_name = models.CharField(max_length=64, unique=True)
    team = models.ForeignKey("teams.Team", on_delete=models.PROTECT, related_name="plugins")
    visibility = models.CharField(max_length=8, choices=Visibility.choices,
                                  default=Visibility.TEAM)
    category = models.CharField(max_length=16, choices=Category.choices, default=Category.OTHER)
    tags = ArrayField(models.CharField(max_length=30), default=list, blank=True)
    summary = models.TextField(blank=True)
    # The newest published, not yanked version; NULL until the first publication.
    latest_version = models.ForeignKey("marketplace.PluginVersion", null=True, blank=True,
                                       on_delete=models.SET_NULL, related_name="+")
    install_count = models.PositiveBigIntegerField(default=0)
    rating_count = models.PositiveIntegerField(default=0)
    rating_avg = models.FloatField(default=0.0)
    search_vector = SearchVectorField(null=True, blank=True)
    summary_embedding = VectorField(dimensions=EMBEDDING_DIMENSIONS, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # First publication: until then only the owner team sees the plugin (awaiting approval).
    published_at = models.DateTimeField(null=True, blank=True)
    # Set when a version is published, so "recently updated" means new code, not a new review.
    updated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["normalized_name"]
        # No ANN index on the embedding: pgvector 0.6 filters after an HNSW search, so with
        # visibility filters it would silently drop matches; an exact scan of a few thousand
        # 384-d rows is a few milliseconds (see docs/marketplace.md, marketplace_bench).
        indexes = [
            GinIndex(fields=["search_vector"], name="plugin_search_gin"),
            GinIndex(fields=["tags"], name="plugin_tags_gin"),
            models.Index(fields=["visibility", "team"], name="plugin_visibility_team"),
            # One per catalogue sort: the first page is read in index order, not sorted.
            models.Index(models.F("install_count").desc(), "id", condition=LISTED,
                         name="plugin_sort_installs"),
            models.Index(models.F("rating_avg").desc(), models.F("rating_count").desc(), "id",
                         condition=LISTED, name="plugin_sort_rating"),
            models.Index(models.F("updated_at").desc(nulls_last=True), "id", condition=LISTED,
                         name="plugin_sort_updated"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def is_listed(self) -> bool:
        return self.latest_version_id is not None


class PluginVersion(models.Model):
    class Status(models.TextChoices):
        CHECKING = "checking", "Being checked"
        FAILED = "failed", "Failed the checks"
        PENDING = "pending", "Awaiting approval"
        PUBLISHED = "published", "Published"
        REJECTED = "rejected", "Rejected"

    class CheckStep(models.TextChoices):
        """Where the checks of an upload are (a worker does them; the page shows it)."""

        QUEUED = "queued", "Waiting for a worker"
        SAFETY = "safety", "Reading its code (the safety gate)"
        TESTS = "tests", "Running its tests in the sandbox"
        BUILD = "build", "Building the wheel and the sdist"
        DONE = "done", "Done"

    class Source(models.TextChoices):
        RUN = "run", "Generation run"
        UPLOAD = "upload", "Upload"
        CLI = "cli", "Command line"

    plugin = models.ForeignKey(Plugin, on_delete=models.PROTECT, related_name="versions")
    version = models.CharField(max_length=64, help_text="PEP 440, canonical form.")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    source = models.CharField(max_length=8, choices=Source.choices)
    # The listing asked for at submission, applied to the plugin when this version publishes.
    visibility = models.CharField(max_length=8, choices=Plugin.Visibility.choices)
    category = models.CharField(max_length=16, choices=Plugin.Category.choices,
                                default=Plugin.Category.OTHER)
    tags = ArrayField(models.CharField(max_length=30), default=list, blank=True)
    summary = models.TextField(blank=True)
    manifest = models.JSONField(default=dict, help_text="plugin.toml, parsed.")
    commands = models.JSONField(default=list, help_text="[{name, description, examples}]")
    files = models.JSONField(default=dict, help_text="The plugin's source files {path: text}.")
    source_sha256 = models.CharField(max_length=64)
    readme = models.TextField(blank=True)
    readme_html = models.TextField(blank=True, help_text="Rendered and sanitised (nh3).")
    # Computed at submission (seconds are spent there anyway) so publishing stays quick.
    summary_embedding = VectorField(dimensions=EMBEDDING_DIMENSIONS, null=True, blank=True)
    changelog = models.TextField(blank=True)
    requires_python = models.CharField(max_length=40, blank=True)
    test_report = models.JSONField(default=dict, blank=True)
    # The quality pipeline's stages and score (docs/engine.md, "The quality pipeline"); empty
    # for versions checked before it existed.
    quality = models.JSONField(default=dict, blank=True)
    safety_report = models.JSONField(default=dict, blank=True)
    safety_verdict = models.CharField(max_length=8, blank=True)
    # Provenance. The run may be deleted later; spec, models and counts stay on the version.
    run = models.ForeignKey("runs.Run", null=True, blank=True, on_delete=models.SET_NULL,
                            related_name="plugin_versions")
    spec = models.JSONField(null=True, blank=True)
    models_used = models.JSONField(default=list, blank=True)
    iterations = models.PositiveIntegerField(default=0)
    submitted_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                     on_delete=models.SET_NULL, related_name="+")
    approval = models.ForeignKey("runs.ApprovalRequest", null=True, blank=True,
                                 on_delete=models.SET_NULL, related_name="+")
    decided_at = models.DateTimeField(null=True, blank=True)
    decision_comment = models.TextField(blank=True)
    published_at = models.DateTimeField(null=True, blank=True)
    yanked = models.BooleanField(default=False)
    yank_reason = models.TextField(blank=True)
    yanked_at = models.DateTimeField(null=True, blank=True)
    yanked_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                  on_delete=models.SET_NULL, related_name="+")
    # The checks of an upload, done by a worker (marketplace.tasks.plugin_version_check): the
    # step shown on the page, the reasons of a failure, and the claim that lets one worker at a
    # time check the version (check_token; claimed_by names a beating worker, so the watchdog
    # hands the check of a dead worker to another one).
    check_step = models.CharField(max_length=8, choices=CheckStep.choices, blank=True)
    check_errors = models.JSONField(default=list, blank=True)
    check_token = models.CharField(max_length=32, blank=True)
    claimed_by = models.CharField(max_length=200, blank=True)
    check_attempts = models.PositiveSmallIntegerField(default=0)
    check_started_at = models.DateTimeField(null=True, blank=True)
    checked_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["plugin", "-created_at"]
        constraints = [
            # A rejected or failed submission frees its number; anything else holds it for good.
            models.UniqueConstraint(fields=["plugin", "version"],
                                    condition=~models.Q(status__in=["rejected", "failed"]),
                                    name="unique_live_plugin_version"),
        ]
        indexes = [models.Index(fields=["plugin", "status"], name="version_plugin_status")]

    def __str__(self) -> str:
        return f"{self.plugin.name} {self.version}"

    @property
    def is_published(self) -> bool:
        return self.status == self.Status.PUBLISHED

    @property
    def reviewed_manifest(self) -> PluginManifest | None:
        """The plugin.toml among the reviewed files, read through the plugin contract (None:
        unreadable). The one form callers read a version's manifest in: `manifest` above is
        its JSON summary without the settings and input tables, for the index and the pages.
        Published files never change, so each text is read once."""
        return _reviewed_manifest(self.files.get("plugin.toml", ""))


class VersionDecision(models.Model):
    """One reviewer's vote on a pending version; the gate opens at the team's required count."""

    version = models.ForeignKey(PluginVersion, on_delete=models.CASCADE, related_name="decisions")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    approved = models.BooleanField()
    comment = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at"]
        constraints = [
            models.UniqueConstraint(fields=["version", "user"], name="one_decision_per_reviewer"),
        ]

    def __str__(self) -> str:
        return f"{self.user} {'approved' if self.approved else 'rejected'} {self.version}"


class Artifact(models.Model):
    class Kind(models.TextChoices):
        WHEEL = "wheel", "Wheel"
        SDIST = "sdist", "Source distribution"

    version = models.ForeignKey(PluginVersion, on_delete=models.PROTECT, related_name="artifacts")
    kind = models.CharField(max_length=8, choices=Kind.choices)
    filename = models.CharField(max_length=200)
    sha256 = models.CharField(max_length=64)
    size = models.PositiveBigIntegerField()
    # Relative to settings.VAR_DIR / "artifacts".
    path = models.CharField(max_length=400)
    download_count = models.PositiveBigIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["version", "kind"]
        constraints = [
            models.UniqueConstraint(fields=["version", "kind"], name="one_artifact_per_kind"),
        ]

    def __str__(self) -> str:
        return self.filename


class Review(models.Model):
    """One per user per plugin; editing replaces the rating and text (updated_at shows it).

    A review written by a member of the plugin's own team is the publisher's own: kept, shown
    to that team as its internal feedback, and never counted in the public rating."""

    plugin = models.ForeignKey(Plugin, on_delete=models.CASCADE, related_name="reviews")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                             related_name="plugin_reviews")
    rating = models.PositiveSmallIntegerField()
    from_publisher = models.BooleanField(
        default=False, help_text="Written by a member of the plugin's team (when last saved).")
    body = models.TextField(blank=True)
    version = models.CharField(max_length=64, blank=True, help_text="Latest version when written.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at"]
        constraints = [
            models.UniqueConstraint(fields=["plugin", "user"], name="one_review_per_user"),
            models.CheckConstraint(condition=models.Q(rating__gte=1, rating__lte=5),
                                   name="review_rating_1_to_5"),
        ]

    def __str__(self) -> str:
        return f"{self.user} rated {self.plugin} {self.rating}/5"


class ApiToken(models.Model):
    """A per-user token for the package index (HTTP basic, the token as password).

    Only a SHA-256 of the token is stored: tokens are 256-bit random, so a fast hash is enough
    and a lookup by hash stays one indexed query per request.
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                             related_name="api_tokens")
    name = models.CharField(max_length=80)
    prefix = models.CharField(max_length=12, help_text="The first characters, to recognise it.")
    token_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}...)"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None


class TryRequest(models.Model):
    """One "Try it" of one user: queued by the page, run by a worker in the sandbox, shown only
    to the user who asked. Small (the result is cut to a few KB) and short-lived: rows older
    than TRY_KEEP_S are deleted when the next try is asked for."""

    class Status(models.TextChoices):
        PENDING = "pending", "Waiting for a worker"
        RUNNING = "running", "Running in the sandbox"
        DONE = "done", "Done"

    version = models.ForeignKey(PluginVersion, on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                             related_name="+")
    # The user's current team when they asked: if it uses this version as a tool, the try gets
    # that team's settings and secrets, as a tool call would (services/trying.py).
    team = models.ForeignKey("teams.Team", on_delete=models.SET_NULL, null=True, blank=True,
                             related_name="+")
    command = models.CharField(max_length=64)
    payload = models.JSONField(default=dict)
    # A try of a plugin that talks to other services is a rehearsal (nothing is sent) unless
    # the trier confirmed sending for real with their team's settings (in its audit log).
    send = models.BooleanField(default=False)
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.PENDING)
    result = models.JSONField(default=dict, blank=True, help_text="ok, output, error, stdout,"
                              " duration_ms")
    # The worker running it (host:pid, its heartbeat key; empty outside a beating worker), so
    # the watchdog can tell a try whose worker died (services/trying.py).
    claimed_by = models.CharField(max_length=200, blank=True, default="")
    attempts = models.PositiveSmallIntegerField(default=0)
    started_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["created_at"], name="try_created")]

    def __str__(self) -> str:
        return f"try {self.command} of {self.version_id} by {self.user_id} ({self.status})"


@functools.lru_cache(maxsize=256)
def _reviewed_manifest(text: str) -> PluginManifest | None:
    return read_manifest(text)
