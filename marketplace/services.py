"""Writes of the marketplace: keyword-only, typed, named <entity>_<action>.

A new version is born "pending" only after every automatic check passed (marketplace/checks.py)
and its artifacts are on disk, in one transaction: a failed submission leaves no row and no file.
It is published when the publish gate opens:
- a version from a generation run waits on the run's publish approval request (the engine's
  gate, decided on the approval screens or here); `publish_approval_decided` settles it;
- an upload or a command-line publish waits for the team's reviewers: `required_approvals`
  approvals publish it, one rejection rejects it.
"""

from __future__ import annotations

import json
import logging
import secrets
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import redis
from django.conf import settings
from django.contrib.auth.models import User
from django.contrib.postgres.search import SearchVector
from django.core.exceptions import PermissionDenied
from django.db import IntegrityError, transaction
from django.db.models import Avg, Count, F, Value
from django.utils import timezone
from packaging.version import Version

from autocoder import heartbeat, realtime
from autocoder.sandbox import Limits, SandboxError
from autocoder.sandbox import run as sandbox_run
from marketplace.build import BuiltArtifact
from marketplace.checks import (
    CheckedPlugin,
    name_and_version_check,
    plugin_package_check,
    plugin_quick_check,
    plugin_slow_check,
)
from marketplace.models import (
    ApiToken,
    Artifact,
    Plugin,
    PluginVersion,
    Review,
    TryRequest,
    VersionDecision,
)
from marketplace.proposals import (
    PROPOSAL_KEY,
    PublishProposal,
    proposal_from_payload,
    proposal_of,
    proposal_wanted,
    publish_payload,
    with_version,
)
from marketplace.selectors import (
    can_see,
    rates_as_publisher,
    token_hash,
    version_decision_refusal,
    viewer_for,
)
from marketplace.storage import artifact_dir_remove, artifact_relpath, artifact_write
from marketplace.validation import (
    Manifest,
    PackageError,
    check_plugin_files,
    clean_tags,
    files_from_directory,
    files_from_wheel,
    files_from_zip,
    normalize_name,
    source_sha256,
)
from projects import approval_rules
from projects.models import (
    ApprovalRequest,
    ApprovalVote,
    LLMCall,
    Membership,
    Project,
    Run,
    Team,
)
from projects.services.audit import audit_record
from projects.services.board import team_event_on_commit

if TYPE_CHECKING:
    from projects.services.approvals import VoteOutcome

logger = logging.getLogger(__name__)

TRY_PER_MINUTE = 10
TRY_WINDOW_S = 60
TRY_LIMITS = Limits(timeout_s=15, memory_mb=512, cpu_s=10, output_kb=64, collect_kb=512)
TRY_MAX_PAYLOAD_CHARS = 20_000
TRY_RESULT = ".autocoder-try-result.json"
TRY_ACTOR = "plugin_try_run"
TRY_KEEP_S = 24 * 60 * 60  # a try's result is kept for a day, then deleted
TRY_MAX_RESULT_CHARS = 16_000
MAX_REVIEW_CHARS = 5000
MAX_YANK_REASON_CHARS = 300
MAX_CHANGELOG_CHARS = 20_000
README_INDEX_CHARS = 20_000
NOT_AS_APPROVED = ("its version, visibility or category is not what the publish request"
                   " approved; publish the run again to ask the reviewers for it")
# The upload checks' actor (marketplace/tasks.py), named for the outbox.
CHECK_ACTOR = "plugin_version_check"
# A check started this often without finishing fails (a plugin that kills its worker).
CHECK_MAX_ATTEMPTS = 3
# Longer than any check takes (tests up to 120 s, the safety gate, the build, a busy queue).
CHECK_STALL_S = 15 * 60
TOKEN_PREFIX = "acpi_"  # noqa: S105 - a marker that makes leaked tokens greppable


class DecisionConflict(Exception):
    """The version was already decided (by someone else, or the gate already closed)."""


class TryRateLimited(Exception):
    def __init__(self, retry_after: int) -> None:
        self.retry_after = max(1, retry_after)
        super().__init__(f"Too many tries: {TRY_PER_MINUTE} a minute. Try again in"
                         f" {self.retry_after} seconds.")


# -- submissions ---------------------------------------------------------------------------------


def files_from_upload(*, filename: str, data: bytes) -> dict[str, str]:
    lower = filename.lower()
    if lower.endswith(".whl"):
        return files_from_wheel(data, Path(filename).name)
    if lower.endswith(".zip"):
        return files_from_zip(data)
    raise PackageError([f"{filename}: upload the plugin directory as a .zip, or a wheel (.whl)"])


def plugin_upload_store(*, team: Team, user: User, filename: str, data: bytes,
                        visibility: str, category: str = "", tags: Sequence[str] = (),
                        changelog: str = "", queue: bool = True) -> PluginVersion:
    """Store an uploaded .zip or wheel as a version being checked, and queue its checks.

    The quick checks (plugin.toml, the file tree, the name and version rules) run here, so a
    malformed upload is refused at once and nothing is created (PackageError lists every
    problem). The slow ones (the safety gate, the tests in the sandbox, the build) run on a
    worker (`plugin_version_check`); the message is written to the outbox in the same
    transaction, so it goes out even if Redis is down at this moment. `queue=False`: the
    caller runs the checks itself (`plugin_upload_submit`)."""
    from autocoder.engine.services import outbox_message_queue

    _require_member(user, team)
    files = files_from_upload(filename=filename, data=data)
    manifest = plugin_quick_check(team=team, files=files)
    listing = _listing(manifest, visibility, category, tags)
    with transaction.atomic():
        plugin = _plugin_for_submission(team, manifest, listing)
        version = PluginVersion.objects.create(
            plugin=plugin, version=manifest.version, source=PluginVersion.Source.UPLOAD,
            status=PluginVersion.Status.CHECKING, check_step=PluginVersion.CheckStep.QUEUED,
            check_started_at=timezone.now(), summary=manifest.summary,
            manifest=manifest.as_dict(), commands=_commands(manifest, None), files=files,
            source_sha256=source_sha256(files), readme=files["README.md"],
            changelog=changelog.strip()[:MAX_CHANGELOG_CHARS], submitted_by=user,
            **_listing_in_force(plugin, listing))
        audit_record(actor=user, action="plugin.submit", team=team, target=version,
                     after={"plugin": plugin.name, "version": version.version,
                            "source": version.source, "visibility": version.visibility,
                            "run": None})
        if queue:
            outbox_message_queue(actor=CHECK_ACTOR, args=[version.pk])
    return version


def plugin_upload_submit(*, team: Team, user: User, filename: str, data: bytes,
                         visibility: str, category: str = "", tags: Sequence[str] = (),
                         changelog: str = "") -> PluginVersion:
    """Store an upload and check it in this process, waiting for the outcome (scripts and
    tests; the upload page queues the checks instead). PackageError lists every problem; a
    version that failed the slow checks stays, "failed the checks", with the reasons."""
    version = plugin_upload_store(team=team, user=user, filename=filename, data=data,
                                  visibility=visibility, category=category, tags=tags,
                                  changelog=changelog, queue=False)
    checked = plugin_version_check(version_id=version.pk) or version
    checked.refresh_from_db()
    if checked.status == PluginVersion.Status.FAILED:
        raise PackageError(list(checked.check_errors))
    return checked


# -- the checks of an upload, on a worker ----------------------------------------------------------
# One worker at a time checks a version: it claims it (check_token, and claimed_by naming the
# worker by its heartbeat) with a guarded update; the outcome is recorded only under that claim.
# A worker killed mid-check leaves the claim: the watchdog sees its heartbeat gone and sends the
# check again (`plugin_checks_orphaned_kick`), and the next worker checks from the start.


def plugin_version_check(*, version_id: int) -> PluginVersion | None:
    """Run the slow checks of a version being checked and record the outcome: "awaiting
    approval" with its reports and artifacts, or "failed the checks" with the reasons.
    Returns None (and does nothing) when the version is not being checked any more or another
    process holds its check (a duplicate message)."""
    token = _check_claim(version_id)
    if token is None:
        return None
    version = PluginVersion.objects.select_related("plugin__team").get(pk=version_id)
    if version.check_attempts > CHECK_MAX_ATTEMPTS:
        return _check_fail(version, token, [
            f"the check was interrupted {CHECK_MAX_ATTEMPTS} times (a worker stopped while"
            " checking it, for example out of memory); nothing was found wrong with the"
            " plugin. Upload it again, or tell your admin if this repeats"])
    try:
        try:
            manifest = check_plugin_files(dict(version.files))
            checked = plugin_slow_check(
                files=version.files, manifest=manifest,
                progress=lambda step: _check_progress(version, token, step))
        except PackageError as exc:
            return _check_fail(version, token, exc.errors)
        return _check_pass(version, token, checked)
    except BaseException:
        # An error trying again may fix (a database hiccup): let go of the claim, so the
        # actor's retry (or the watchdog) checks it again. A killed worker never gets here;
        # the watchdog sees its heartbeat gone instead.
        PluginVersion.objects.filter(pk=version_id, check_token=token).update(
            check_token="", claimed_by="")
        raise


def _check_claim(version_id: int) -> str | None:
    token = uuid.uuid4().hex
    won = PluginVersion.objects.filter(
        pk=version_id, status=PluginVersion.Status.CHECKING, check_token="").update(
        check_token=token, claimed_by=heartbeat.current_worker_id(),
        check_attempts=F("check_attempts") + 1, check_started_at=timezone.now())
    return token if won else None


def _check_progress(version: PluginVersion, token: str, step: str) -> None:
    if PluginVersion.objects.filter(pk=version.pk, check_token=token).update(check_step=step):
        _check_event(version, step=step)


def _check_fail(version: PluginVersion, token: str, errors: list[str]) -> PluginVersion | None:
    with transaction.atomic():
        won = PluginVersion.objects.filter(
            pk=version.pk, status=PluginVersion.Status.CHECKING, check_token=token).update(
            status=PluginVersion.Status.FAILED, check_errors=list(errors),
            check_step=PluginVersion.CheckStep.DONE, check_token="", claimed_by="",
            checked_at=timezone.now())
        if not won:
            return None
        audit_record(actor=None, action="plugin.check", team=version.plugin.team,
                     target=version, after={"outcome": "failed", "errors": errors[:20]})
        _check_event(version, step="failed")
    version.refresh_from_db()
    return version


def _check_pass(version: PluginVersion, token: str, checked: CheckedPlugin) -> PluginVersion | None:
    plugin = version.plugin
    embedding = _summary_embedding(checked.manifest.name, checked.manifest.summary)
    try:
        with transaction.atomic():
            locked = (PluginVersion.objects.select_for_update()
                      .filter(pk=version.pk, status=PluginVersion.Status.CHECKING,
                              check_token=token).first())
            if locked is None:  # taken over meanwhile: the other check's outcome counts
                return None
            Artifact.objects.filter(version=locked).delete()  # a killed check's leftovers
            _artifacts_store(plugin, locked, checked.artifacts)
            PluginVersion.objects.filter(pk=locked.pk).update(
                status=PluginVersion.Status.PENDING, check_step=PluginVersion.CheckStep.DONE,
                check_errors=[], check_token="", claimed_by="", checked_at=timezone.now(),
                readme_html=checked.readme_html, requires_python=checked.requires_python,
                test_report=checked.tests, safety_report=checked.safety,
                safety_verdict=checked.safety["verdict"], summary_embedding=embedding)
            audit_record(actor=None, action="plugin.check", team=plugin.team, target=locked,
                         after={"outcome": "passed", "safety": checked.safety["verdict"],
                                "files": [(a.filename, a.sha256) for a in checked.artifacts]})
    except BaseException:
        artifact_dir_remove(plugin.normalized_name, version.pk)
        raise
    version.refresh_from_db()
    _deciders_notify(version)
    _check_event(version, step="passed")
    return version


def _check_event(version: PluginVersion, *, step: str) -> None:
    """Tell the team's open pages (the version page listens) that the check moved on, once
    committed. Best effort: the page also asks every few seconds."""
    data = {"version": version.pk, "plugin": version.plugin.name, "step": step}

    def send() -> None:
        try:
            realtime.publish(realtime.team_group(version.plugin.team_id),
                             {"kind": "plugin_version.check", "data": data})
        except Exception:  # Redis down: the page's poll shows it anyway
            logger.warning("could not publish the check event of version %s", version.pk)

    transaction.on_commit(send)


def plugin_checks_orphaned_kick(*, live: set[str] | None = None) -> list[int]:
    """The watchdog's quick sweep: send again the check of every version whose claiming
    worker's heartbeat has expired (killed mid-check); one sweeper wins each (guarded update).
    Returns the versions sent again."""
    alive = live if live is not None else heartbeat.live_worker_ids()
    held = (PluginVersion.objects.filter(status=PluginVersion.Status.CHECKING)
            .exclude(claimed_by="").values_list("id", "claimed_by"))
    kicked = [version_id for version_id, worker in held if worker not in alive
              and _check_resend(PluginVersion.objects.filter(
                  pk=version_id, status=PluginVersion.Status.CHECKING, claimed_by=worker))]
    if kicked:
        logger.warning("sent again the checks of versions %s (their worker died)", kicked)
    return kicked


def plugin_checks_stalled_kick(*, stalled_for_s: float | None = None) -> list[int]:
    """The watchdog's slow sweep: send again the check of every version that has been
    "being checked" for longer than any check takes (a lost message, or a process checking
    in-line that died). Returns the versions sent again."""
    limit = stalled_for_s if stalled_for_s is not None else CHECK_STALL_S
    cutoff = timezone.now() - timedelta(seconds=limit)
    stalled = PluginVersion.objects.filter(status=PluginVersion.Status.CHECKING,
                                           check_started_at__lt=cutoff)
    kicked = [version_id for version_id in stalled.values_list("id", flat=True)
              if _check_resend(stalled.filter(pk=version_id))]
    if kicked:
        logger.warning("sent again the checks of stalled versions %s", kicked)
    return kicked


def _check_resend(guard: Any) -> bool:
    from autocoder.engine.services import outbox_message_queue

    with transaction.atomic():
        version = guard.select_for_update(skip_locked=True).first()
        if version is None or not guard.filter(pk=version.pk).update(
                check_token="", claimed_by="", check_step=PluginVersion.CheckStep.QUEUED,
                check_started_at=timezone.now()):
            return False
        outbox_message_queue(actor=CHECK_ACTOR, args=[version.pk])
        _check_event(version, step="queued")
    return True


def plugin_directory_publish(*, directory: Path, team: Team, approver: User,
                             visibility: str = "", category: str = "",
                             tags: Sequence[str] = (), changelog: str = "") -> PluginVersion:
    """The command line's publish: the upload checks on a directory, then `approver` (an admin
    of the team) opens the gate; both steps are in the audit log. An explicit visibility also
    applies to an existing plugin (the approver is an admin, who may change it)."""
    if viewer_for(approver).roles.get(team.id) != Membership.Role.ADMIN:
        raise PermissionDenied(f"{approver.get_username()} is not an admin of team {team.slug}")
    checked = plugin_package_check(team=team, files=files_from_directory(directory))
    version = _version_create(team=team, checked=checked, source=PluginVersion.Source.CLI,
                              user=None, visibility=visibility or Plugin.Visibility.TEAM,
                              category=category, tags=tags, changelog=changelog)
    version = plugin_version_decide(version=version, user=approver, approve=True,
                                    comment="approved on the command line (plugin_publish)")
    plugin = Plugin.objects.get(pk=version.plugin_id)
    if visibility and plugin.visibility != visibility:
        plugin_settings_update(plugin=plugin, user=approver, visibility=visibility,
                               category=plugin.category, tags=plugin.tags)
    return version


def plugin_version_publish(*, run: Run, user: User, visibility: str,
                           version: str = "", category: str = "", tags: Sequence[str] = (),
                           changelog: str = "") -> PluginVersion:
    """Submit the result of a succeeded run. Its publish request is the gate, and it covers
    one combination of version, visibility and category (what the reviewer saw): a request
    approved for exactly the chosen one publishes at once; a pending request is changed to ask
    for it; after an approval of another combination a new request asks for it (the version
    waits on it). Tags and the changelog are free."""
    team = run.project.team
    _require_member(user, team)
    if run.status != Run.Status.SUCCEEDED:
        raise PackageError([f"run {run.pk} is {run.status}; only a succeeded run can be"
                            " published"])
    latest = _publish_request_latest(run)
    # Exactly the candidate the publish request is about, so the approval covers these files.
    iteration = (run.iterations.filter(number=latest.iteration).first()
                 or run.best_iteration)
    if iteration is None or not iteration.files:
        raise PackageError([f"run {run.pk} has no successful iteration to publish"])
    if PluginVersion.objects.filter(run=run).exclude(status=PluginVersion.Status.REJECTED).exists():
        raise PackageError([f"run {run.pk} was already submitted to the marketplace"])
    checked = plugin_package_check(team=team, files=with_version(iteration.files, version),
                                   test_report=iteration.test_report)
    wanted = proposal_wanted(team=team, manifest=checked.manifest, visibility=visibility,
                             category=category)
    with transaction.atomic():
        approval = _publish_request_for(run=run, wanted=wanted, files=iteration.files, user=user)
        created = _version_create(
            team=team, checked=checked, source=PluginVersion.Source.RUN, user=user,
            visibility=wanted.visibility, category=wanted.category, tags=tags,
            changelog=changelog, run=run, spec=run.project.spec, models_used=_models_used(run),
            iterations=run.iteration, approval=approval)
    if approval.status == ApprovalRequest.Status.APPROVED:
        publish_approval_decided(approval=approval)
        created.refresh_from_db()
    return created


def _publish_request_latest(run: Run) -> ApprovalRequest:
    approval = (ApprovalRequest.objects.filter(run=run, kind=ApprovalRequest.Kind.PUBLISH)
                .order_by("-created_at", "-pk").first())
    if approval is None:
        raise PackageError([f"run {run.pk} has no publish approval request"])
    return approval


def _publish_request_for(*, run: Run, wanted: PublishProposal, files: dict[str, str],
                         user: User) -> ApprovalRequest:
    """The publish request that covers `wanted`, asking the reviewers again when none does.

    Locked, so two submissions cannot both change the same request."""
    requests = list(ApprovalRequest.objects.select_for_update()
                    .filter(run=run, kind=ApprovalRequest.Kind.PUBLISH)
                    .select_related("project__team").order_by("-created_at", "-pk"))
    for request in requests:
        if (request.status == ApprovalRequest.Status.APPROVED
                and proposal_of(request, files=files) == wanted):
            return request
    latest = requests[0]
    if latest.status == ApprovalRequest.Status.PENDING:
        if proposal_from_payload(latest.payload) == wanted:
            return latest
        return _publish_request_amend(latest, wanted=wanted, files=files, user=user)
    if latest.status == ApprovalRequest.Status.APPROVED:
        return _publish_request_renew(latest, wanted=wanted, files=files, user=user)
    raise PackageError([f"the publish request of run {run.pk} was"
                        f" {latest.get_status_display().lower()}; it cannot be published"])


def _publish_request_amend(approval: ApprovalRequest, *, wanted: PublishProposal,
                           files: dict[str, str], user: User) -> ApprovalRequest:
    """A pending request now asks for `wanted`. Its candidate fingerprint changes with the
    payload, so votes cast on the old combination stop counting and a reviewer still looking
    at it is told the request changed instead of approving what they did not see."""
    before = approval.payload.get(PROPOSAL_KEY)
    payload = {**approval.payload, **publish_payload(files=files, proposal=wanted)}
    ApprovalRequest.objects.filter(pk=approval.pk, status=ApprovalRequest.Status.PENDING).update(
        payload=payload)
    audit_record(actor=user, action="approval.publish_as_changed", team=approval.project.team,
                 target=approval, before={"publish_as": before},
                 after={"publish_as": payload[PROPOSAL_KEY]})
    approval.refresh_from_db()
    return approval


def _publish_request_renew(approved: ApprovalRequest, *, wanted: PublishProposal,
                           files: dict[str, str], user: User) -> ApprovalRequest:
    """A new pending request for `wanted`: the approval of another combination does not cover
    it (reviewers and admins are notified as for any new request)."""
    granted = proposal_of(approved, files=files)
    payload = {**approved.payload, **publish_payload(files=files, proposal=wanted),
               "reasoning": f"{user.get_username()} asks to publish this run with"
                            f" {wanted.describe()}; the earlier approval covered"
                            f" {granted.describe()}."}
    renewed = ApprovalRequest.objects.create(
        run=approved.run, project=approved.project, kind=ApprovalRequest.Kind.PUBLISH,
        iteration=approved.iteration, payload=payload)
    audit_record(actor=user, action="approval.publish_as_changed", team=approved.project.team,
                 target=renewed, before={"publish_as": granted.as_payload(),
                                         "approval": approved.pk},
                 after={"publish_as": payload[PROPOSAL_KEY]})
    return renewed


def _models_used(run: Run) -> list[dict[str, Any]]:
    rows = (LLMCall.objects.filter(run=run).values("role", "provider", "model")
            .annotate(calls=Count("id")).order_by("role", "provider", "model"))
    return [{"role": r["role"], "provider": r["provider"], "model": r["model"],
             "calls": r["calls"]} for r in rows]


def _version_create(*, team: Team, checked: CheckedPlugin, source: str,
                    user: User | None, visibility: str, category: str,
                    tags: Sequence[str], changelog: str, run: Run | None = None,
                    spec: dict[str, Any] | None = None,
                    models_used: list[dict[str, Any]] | None = None, iterations: int = 0,
                    approval: ApprovalRequest | None = None) -> PluginVersion:
    listing = _listing(checked.manifest, visibility, category, tags)
    embedding = _summary_embedding(checked.manifest.name, checked.manifest.summary)
    created: PluginVersion | None = None
    try:
        with transaction.atomic():
            plugin = _plugin_for_submission(team, checked.manifest, listing)
            listing = _listing_in_force(plugin, listing)
            created = PluginVersion.objects.create(
                plugin=plugin, version=checked.manifest.version, source=source,
                summary=checked.manifest.summary, manifest=checked.manifest.as_dict(),
                commands=_commands(checked.manifest, spec), files=checked.files,
                source_sha256=source_sha256(checked.files), readme=checked.files["README.md"],
                readme_html=checked.readme_html, changelog=changelog.strip()[:MAX_CHANGELOG_CHARS],
                requires_python=checked.requires_python, test_report=checked.tests,
                safety_report=checked.safety, safety_verdict=checked.safety["verdict"],
                summary_embedding=embedding, run=run, spec=spec, models_used=models_used or [],
                iterations=iterations, submitted_by=user, approval=approval, **listing)
            _artifacts_store(plugin, created, checked.artifacts)
            audit_record(actor=user, action="plugin.submit", team=team, target=created,
                         after={"plugin": plugin.name, "version": created.version,
                                "source": source, "visibility": listing["visibility"],
                                "run": run.pk if run else None})
    except BaseException:
        if created is not None and created.pk:
            artifact_dir_remove(normalize_name(checked.manifest.name), created.pk)
        raise
    return created


def _listing(manifest: Manifest, visibility: str, category: str,
             tags: Sequence[str]) -> dict[str, Any]:
    if visibility not in Plugin.Visibility.values:
        raise PackageError([f"visibility must be one of {', '.join(Plugin.Visibility.values)}"])
    category = category or manifest.category or Plugin.Category.OTHER
    if category not in Plugin.Category.values:
        raise PackageError([f"category {category!r} is not one of"
                            f" {', '.join(Plugin.Category.values)}"])
    return {"visibility": visibility, "category": category,
            "tags": list(clean_tags(tags) if tags else manifest.tags)}


def _listing_in_force(plugin: Plugin, asked: dict[str, Any]) -> dict[str, Any]:
    """Visibility, category and tags belong to the plugin once it is published: a new version
    keeps them (so an upload by a requester cannot make a team plugin public); team admins
    change them on the plugin's page. Until the first publication the submission decides."""
    if plugin.published_at is None:
        return asked
    return {"visibility": plugin.visibility, "category": plugin.category,
            "tags": list(plugin.tags)}


def _plugin_for_submission(team: Team, manifest: Manifest, listing: dict[str, Any]) -> Plugin:
    """The team's plugin row, locked, creating it for a first submission; the name and version
    rules are checked again under the lock, so two racing submissions cannot both pass."""
    if name_and_version_check(team=team, manifest=manifest) is None:
        try:
            with transaction.atomic():
                Plugin.objects.create(name=manifest.name, normalized_name=manifest.normalized_name,
                                      team=team, summary=manifest.summary, **listing)
        except IntegrityError:
            pass  # created meanwhile by a concurrent submission: checked again below
    plugin = Plugin.objects.select_for_update().get(normalized_name=manifest.normalized_name)
    name_and_version_check(team=team, manifest=manifest)
    return plugin


def _commands(manifest: Manifest, spec: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Commands from the manifest, with the spec's examples for a generated plugin."""
    examples: dict[str, list[Any]] = {}
    for command in (spec or {}).get("commands", []):
        examples[command.get("name", "")] = command.get("examples", [])
    result = []
    for command in manifest.commands:
        entry = command.as_dict()
        entry["examples"] = entry["examples"] or examples.get(command.name, [])
        result.append(entry)
    return result


def _summary_embedding(name: str, summary: str) -> list[float] | None:
    """The embedding searched by meaning; a failing embedder costs semantic search for this
    plugin (full text still finds it), never the submission."""
    from autocoder.lessons.embedder import EmbedderError, embed_text

    try:
        return [float(x) for x in embed_text(embedding_text(name, summary))]
    except EmbedderError:
        logger.exception("could not embed the summary of %s", name)
        return None


def embedding_text(name: str, summary: str) -> str:
    return f"{name.replace('-', ' ').replace('_', ' ')}: {summary}"


def _artifacts_store(plugin: Plugin, version: PluginVersion,
                     artifacts: Sequence[BuiltArtifact]) -> None:
    for built in artifacts:
        relpath = artifact_relpath(plugin.normalized_name, version.pk, built.filename)
        artifact_write(relpath, built.data)
        Artifact.objects.create(version=version, kind=built.kind, filename=built.filename,
                                sha256=built.sha256, size=len(built.data), path=relpath)


# -- the publish gate ----------------------------------------------------------------------------


def plugin_version_decide(*, version: PluginVersion, user: User, approve: bool,
                          comment: str = "") -> PluginVersion:
    """A reviewer's decision on a pending version, under the approval rules
    (projects/approval_rules.py) like every gate. Raises ApprovalRefused (a PermissionDenied)
    and DecisionConflict."""
    if version.approval_id:
        return _decide_via_run_approval(version, user, approve, comment)
    plugin = version.plugin
    refusal = version_decision_refusal(version=version, user=user)
    if refusal:
        raise approval_rules.MayNotDecide(refusal)
    with transaction.atomic():
        locked = PluginVersion.objects.select_for_update().get(pk=version.pk)
        if locked.status != PluginVersion.Status.PENDING:
            raise DecisionConflict(f"{plugin.name} {locked.version} was already"
                                   f" {locked.get_status_display().lower()}")
        VersionDecision.objects.update_or_create(version=locked, user=user, defaults={
            "approved": approve, "comment": comment.strip()})
        audit_record(actor=user, action="plugin.approve" if approve else "plugin.reject",
                     team=plugin.team, target=locked, after={"comment": comment.strip()})
        if not approve:
            _version_reject(locked, comment)
        elif _approvals(locked) >= approval_rules.approvals_needed(plugin.team):
            _version_go_live(locked, user)
    version.refresh_from_db()
    if version.status != PluginVersion.Status.PENDING:
        _submitter_notify(version, actor=user, comment=comment)
    return version


def _deciders_notify(version: PluginVersion) -> None:
    """Put a new upload in the bell of everyone the approval rules let decide it."""
    from projects.selectors.approvals import upload_url
    from projects.services.notifications import notifications_review_requested

    plugin = version.plugin
    submitter = version.submitted_by.get_username() if version.submitted_by else "someone"
    deciders = [user for user in approval_rules.upload_deciders(
                    team=plugin.team, submitted_by_id=version.submitted_by_id)
                if can_see(viewer_for(user), plugin)]
    notifications_review_requested(
        team=plugin.team, users=deciders, url=upload_url(version),
        message=f"Review needed: {submitter} uploaded version {version.version} of"
                f" “{plugin.name}”.")


def _submitter_notify(version: PluginVersion, *, actor: User, comment: str) -> None:
    """Tell whoever uploaded `version` how it was decided, with the reviewer's words."""
    from projects.selectors.approvals import upload_url
    from projects.services.notifications import decision_message, notification_decided_send

    plugin = version.plugin
    message = decision_message(actor=actor, what=f"version {version.version} of “{plugin.name}”",
                               outcome=version.get_status_display().lower(), comment=comment)
    notification_decided_send(user_id=version.submitted_by_id, team_id=plugin.team_id,
                              actor=actor, message=message, url=upload_url(version))


def _approvals(version: PluginVersion) -> int:
    """Approvals by people who may still decide (one who left the team no longer counts)."""
    approvals = version.decisions.filter(approved=True).select_related("user")
    return sum(not version_decision_refusal(version=version, user=decision.user)
               for decision in approvals)


def _decide_via_run_approval(version: PluginVersion, user: User, approve: bool,
                             comment: str) -> PluginVersion:
    """A generated version's gate is its run's publish request: the vote goes through the
    approval screens' service (N approvals, audit, notifications, the engine's decision)."""
    from projects.services.approvals import approval_vote_cast

    approval = (ApprovalRequest.objects.select_related("project__team")
                .get(pk=int(version.approval_id or 0)))
    if approval.status == ApprovalRequest.Status.PENDING:
        try:
            approval_vote_cast(approval=approval, user=user,
                               decision="approve" if approve else "reject", comment=comment,
                               candidate=approval_rules.approval_candidate(approval))
        except (approval_rules.AlreadyDecided, approval_rules.StaleCandidate) as exc:
            raise DecisionConflict(str(exc)) from exc
        approval.refresh_from_db()
    publish_approval_decided(approval=approval)
    version.refresh_from_db()
    return version


def publish_request_approve(*, approval: ApprovalRequest, user: User, comment: str,
                            candidate: str, version: str, visibility: str,
                            category: str) -> VoteOutcome:
    """Approve a run's publish request with the version, visibility and category the reviewer
    chose on its review page, and publish it: one step, no second form.

    The approval rules come first (a refused decision submits nothing); then the run's result
    is submitted as `plugin_version_publish` does (every check, the request changed to ask for
    exactly this combination) and the reviewer's approval is cast on that. When it settles the
    gate the version is live on return; with more approvals needed it waits for them. A
    PackageError (the plugin cannot be published so) decides nothing."""
    from projects.services.approvals import approval_vote_cast

    approve = ApprovalVote.Decision.APPROVE
    approval_rules.check_decision(approval, user=user, decision=approve, comment=comment,
                                  candidate=candidate)
    submitted: PluginVersion | None = None
    try:
        with transaction.atomic():
            submitted = plugin_version_publish(run=approval.run, user=user, version=version,
                                               visibility=visibility, category=category)
            asked = ApprovalRequest.objects.select_related("project__team", "run").get(
                pk=approval.pk)
            if submitted.approval_id != asked.pk:  # the run moved on meanwhile
                raise approval_rules.StaleCandidate(
                    "The run's publish request changed since you opened this page; nothing "
                    "was decided. Review the current request.")
            return approval_vote_cast(approval=asked, user=user, decision=approve,
                                      comment=comment,
                                      candidate=approval_rules.approval_candidate(asked))
    except BaseException:
        if submitted is not None:  # rolled back: its files go too
            artifact_dir_remove(submitted.plugin.normalized_name, submitted.pk)
        raise


def publish_approval_decided(*, approval: ApprovalRequest) -> list[PluginVersion]:
    """Settle the versions waiting on a run's publish approval once it is decided: approved
    publishes them, anything else rejects them. Idempotent; the approval screens call it too."""
    if approval.kind != ApprovalRequest.Kind.PUBLISH:
        return []
    settled = []
    with transaction.atomic():
        waiting = (PluginVersion.objects.select_for_update()
                   .filter(approval=approval, status=PluginVersion.Status.PENDING))
        for version in waiting:
            if (approval.status == ApprovalRequest.Status.APPROVED
                    and not _approved_as_submitted(version, approval)):
                _version_reject(version, NOT_AS_APPROVED)
            elif approval.status == ApprovalRequest.Status.APPROVED:
                _version_go_live(version, approval.decided_by)
            elif approval.status != ApprovalRequest.Status.PENDING:
                _version_reject(version, approval.comment)
            settled.append(version)
    return settled


def _approved_as_submitted(version: PluginVersion, approval: ApprovalRequest) -> bool:
    """The version carries the combination the request approved (requests made before they
    carried one approved the defaults, which plugin_version_publish already matched)."""
    proposal = proposal_from_payload(approval.payload)
    return proposal is None or proposal == PublishProposal(
        version=version.version, visibility=version.visibility, category=version.category)


def _version_reject(version: PluginVersion, comment: str) -> None:
    PluginVersion.objects.filter(pk=version.pk, status=PluginVersion.Status.PENDING).update(
        status=PluginVersion.Status.REJECTED, decided_at=timezone.now(),
        decision_comment=comment.strip())


def _project_mark_published(*, run_id: int, now: Any) -> None:
    project = Project.objects.filter(runs__id=run_id).first()
    if project is None or project.status == Project.Status.PUBLISHED:
        return
    Project.objects.filter(id=project.id).update(
        status=Project.Status.PUBLISHED, status_changed_at=now, updated_at=now, queue_position=0)
    team_event_on_commit(team_id=project.team_id, kind="project.updated",
                         data={"project": project.id, "status": Project.Status.PUBLISHED})


def _version_go_live(version: PluginVersion, approver: User | None) -> None:
    now = timezone.now()
    won = PluginVersion.objects.filter(pk=version.pk, status=PluginVersion.Status.PENDING).update(
        status=PluginVersion.Status.PUBLISHED, published_at=now, decided_at=now)
    if not won:
        return
    plugin = Plugin.objects.select_for_update().get(pk=version.plugin_id)
    if plugin.published_at is None:  # the first publication lists the plugin as submitted
        plugin.visibility, plugin.category, plugin.tags = (version.visibility, version.category,
                                                           list(version.tags))
    plugin.published_at = plugin.published_at or now
    plugin.updated_at = now
    plugin.save(update_fields=["visibility", "category", "tags", "published_at", "updated_at"])
    plugin_listing_refresh(plugin=plugin)
    if version.run_id:  # the project's card moves to the board's Published column
        _project_mark_published(run_id=version.run_id, now=now)
    audit_record(actor=approver, action="plugin.publish", team=plugin.team, target=version,
                 after={"plugin": plugin.name, "version": version.version,
                        "visibility": plugin.visibility,
                        "files": list(version.artifacts.values_list("filename", "sha256"))})


def plugin_listing_refresh(*, plugin: Plugin) -> Plugin:
    """Point the plugin at its newest published, not yanked version and refresh what search
    reads (summary, full-text vector, summary embedding) from it."""
    candidates = list(plugin.versions.filter(status=PluginVersion.Status.PUBLISHED, yanked=False)
                      .only("id", "version", "summary", "readme", "summary_embedding"))
    latest = max(candidates, key=lambda v: Version(v.version), default=None)
    plugin.latest_version = latest
    fields = ["latest_version"]
    if latest is not None:
        plugin.summary = latest.summary
        plugin.summary_embedding = latest.summary_embedding
        fields += ["summary", "summary_embedding"]
    plugin.save(update_fields=fields)
    readme = latest.readme[:README_INDEX_CHARS] if latest else ""
    Plugin.objects.filter(pk=plugin.pk).update(search_vector=search_vector_for(
        name=plugin.name, summary=plugin.summary, tags=plugin.tags, readme=readme))
    return plugin


def search_vector_for(*, name: str, summary: str, tags: Iterable[str], readme: str) -> Any:
    words = name.replace("-", " ").replace("_", " ")
    return (SearchVector(Value(f"{name} {words}"), weight="A", config="english")
            + SearchVector(Value(f"{summary} {' '.join(tags)}"), weight="B", config="english")
            + SearchVector(Value(readme), weight="C", config="english"))


# -- after publication ---------------------------------------------------------------------------


def plugin_version_yank(*, version: PluginVersion, user: User,
                        reason: str) -> PluginVersion:
    """Mark a published version yanked (PEP 592): pip skips it unless pinned exactly. The files
    stay, so existing pins keep installing; the reason is shown everywhere."""
    reason = " ".join(reason.split())
    if not reason:
        raise PackageError(["a yanked version needs a reason (users see it in pip's warning)"])
    if len(reason) > MAX_YANK_REASON_CHARS:
        raise PackageError([f"the reason must be at most {MAX_YANK_REASON_CHARS} characters"])
    _require_reviewer(user, version.plugin.team)
    with transaction.atomic():
        won = PluginVersion.objects.filter(
            pk=version.pk, status=PluginVersion.Status.PUBLISHED, yanked=False).update(
            yanked=True, yank_reason=reason, yanked_at=timezone.now(), yanked_by=user)
        if not won:
            raise DecisionConflict(f"{version} is not a published, unyanked version")
        plugin = Plugin.objects.select_for_update().get(pk=version.plugin_id)
        plugin_listing_refresh(plugin=plugin)
        audit_record(actor=user, action="plugin.yank", team=plugin.team, target=version,
                     after={"reason": reason})
    version.refresh_from_db()
    return version


def plugin_version_unyank(*, version: PluginVersion, user: User) -> PluginVersion:
    _require_reviewer(user, version.plugin.team)
    with transaction.atomic():
        won = PluginVersion.objects.filter(pk=version.pk, yanked=True).update(
            yanked=False, yank_reason="", yanked_at=None, yanked_by=None)
        if not won:
            raise DecisionConflict(f"{version} is not yanked")
        plugin = Plugin.objects.select_for_update().get(pk=version.plugin_id)
        plugin_listing_refresh(plugin=plugin)
        audit_record(actor=user, action="plugin.unyank", team=plugin.team, target=version)
    version.refresh_from_db()
    return version


def plugin_settings_update(*, plugin: Plugin, user: User, visibility: str,
                           category: str, tags: Sequence[str]) -> Plugin:
    """Change who sees the plugin and how it is listed (team admins)."""
    if viewer_for(user).roles.get(plugin.team_id) != Membership.Role.ADMIN:
        raise PermissionDenied("Only the team's admins change a plugin's visibility.")
    if visibility not in Plugin.Visibility.values or category not in Plugin.Category.values:
        raise PackageError(["choose a visibility and a category from the lists"])
    before = {"visibility": plugin.visibility, "category": plugin.category,
              "tags": list(plugin.tags)}
    plugin.visibility, plugin.category, plugin.tags = visibility, category, list(clean_tags(tags))
    with transaction.atomic():
        plugin.save(update_fields=["visibility", "category", "tags"])
        plugin_listing_refresh(plugin=plugin)
        audit_record(actor=user, action="plugin.settings_update", team=plugin.team,
                     target=plugin, before=before,
                     after={"visibility": visibility, "category": category,
                            "tags": list(plugin.tags)})
    return plugin


def artifact_download_record(*, artifact: Artifact) -> None:
    """Count a download; the plugin's install count is the sum over its files."""
    Artifact.objects.filter(pk=artifact.pk).update(download_count=F("download_count") + 1)
    Plugin.objects.filter(pk=artifact.version.plugin_id).update(
        install_count=F("install_count") + 1)


# -- reviews -------------------------------------------------------------------------------------


def review_upsert(*, plugin: Plugin, user: User, rating: int,
                  body: str = "") -> Review:
    """Create or edit the user's review (one per user per plugin) and refresh the average.

    Rules: the plugin must be published and visible to the user; a member of its own team
    rates as its publisher (selectors.rates_as_publisher: kept apart, not in the public
    rating); the rating is a whole number from 1 to 5; the text is at most 5000 characters.
    """
    viewer = viewer_for(user)
    if not can_see(viewer, plugin) or plugin.published_at is None:
        raise PermissionDenied("This plugin cannot be reviewed.")
    if isinstance(rating, bool) or not isinstance(rating, int) or not 1 <= rating <= 5:
        raise PackageError(["rating: choose from 1 to 5 stars"])
    if len(body) > MAX_REVIEW_CHARS:
        raise PackageError([f"review: at most {MAX_REVIEW_CHARS} characters (got {len(body)})"])
    latest = plugin.latest_version.version if plugin.latest_version else ""
    with transaction.atomic():
        locked = Plugin.objects.select_for_update().get(pk=plugin.pk)
        review, _ = Review.objects.update_or_create(plugin=locked, user=user, defaults={
            "rating": rating, "body": body.strip(), "version": latest,
            "from_publisher": rates_as_publisher(viewer, plugin)})
        _rating_refresh(locked)
    return review


def review_delete(*, review: Review, user: User) -> None:
    if review.user_id != user.pk:
        raise PermissionDenied("Only its author can delete a review.")
    with transaction.atomic():
        locked = Plugin.objects.select_for_update().get(pk=review.plugin_id)
        review.delete()
        _rating_refresh(locked)


def _rating_refresh(plugin: Plugin) -> None:
    # The public rating: the publisher's own reviews are not in it.
    stats = plugin.reviews.filter(from_publisher=False).aggregate(count=Count("id"),
                                                                  avg=Avg("rating"))
    Plugin.objects.filter(pk=plugin.pk).update(rating_count=stats["count"] or 0,
                                               rating_avg=float(stats["avg"] or 0.0))


# -- API tokens ----------------------------------------------------------------------------------


def api_token_create(*, user: User, name: str) -> tuple[ApiToken, str]:
    """A new token for the package index; the raw token is returned once and never stored."""
    name = " ".join(name.split())[:80]
    if not name:
        raise PackageError(["name the token (for example the machine that will use it)"])
    raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(user=user, name=name, prefix=raw[:12],
                                    token_hash=token_hash(raw))
    return token, raw


def api_token_revoke(*, user: User, token_id: int) -> bool:
    return bool(ApiToken.objects.filter(pk=token_id, user=user, revoked_at__isnull=True)
                .update(revoked_at=timezone.now()))


# -- "try it" ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TryResult:
    ok: bool
    output: Any = None
    error: str = ""
    stdout: str = ""
    duration_ms: int = 0


def try_rate_limit_hit(*, user_id: int) -> None:
    """Count one try for the user; TryRateLimited (with seconds to wait) past the limit.

    A fixed one-minute window per user in Redis (INCR + EXPIRE), shared by every web process.
    """
    client = redis.Redis.from_url(settings.REDIS_URL)
    key = f"marketplace:try:{user_id}"
    pipe = client.pipeline()
    pipe.incr(key)
    pipe.ttl(key)
    count, ttl = pipe.execute()
    if int(ttl) < 0:  # a new window (EXPIRE NX needs Redis 7; the embedded one is 6.2)
        client.expire(key, TRY_WINDOW_S)
        ttl = TRY_WINDOW_S
    if int(count) > TRY_PER_MINUTE:
        raise TryRateLimited(retry_after=int(ttl) if int(ttl) > 0 else TRY_WINDOW_S)


def plugin_try_request(*, version: PluginVersion, user: User, command: str,
                       payload: Any) -> TryRequest:
    """Queue one try for a worker (PackageError, TryRateLimited at once); the page shows it
    pending and fills it in when `plugin_try_perform` has stored the result. Old tries are
    deleted here, so the table stays small."""
    from autocoder.engine.services import outbox_message_queue

    _try_validate(version, command, payload)
    try_rate_limit_hit(user_id=user.pk)
    with transaction.atomic():
        TryRequest.objects.filter(created_at__lt=timezone.now() - timedelta(
            seconds=TRY_KEEP_S)).delete()
        asked = TryRequest.objects.create(version=version, user=user, command=command,
                                          payload=payload)
        outbox_message_queue(actor=TRY_ACTOR, args=[asked.pk])
    return asked


def plugin_try_perform(*, try_id: int) -> TryRequest | None:
    """Run a queued try once (a guarded update: a duplicate message does nothing) and store
    its result, cut to a few KB."""
    if not TryRequest.objects.filter(pk=try_id, status=TryRequest.Status.PENDING).update(
            status=TryRequest.Status.RUNNING):
        return None
    asked = TryRequest.objects.select_related("version").get(pk=try_id)
    try:
        result = _try_execute(asked.version, asked.command, asked.payload)
    except Exception as exc:
        logger.exception("try %s failed", try_id)
        result = TryResult(ok=False, error=f"The sandbox could not run the plugin: {exc}")
    stored = {"ok": result.ok, "output": result.output, "error": result.error[-3000:],
              "stdout": result.stdout[-4000:], "duration_ms": result.duration_ms}
    if len(json.dumps(stored)) > TRY_MAX_RESULT_CHARS:
        stored["output"] = None
        stored["error"] = stored["error"] or "The output was too large to show here."
        stored["ok"] = False
    TryRequest.objects.filter(pk=try_id).update(status=TryRequest.Status.DONE, result=stored,
                                                finished_at=timezone.now())
    asked.refresh_from_db()
    return asked


def _try_validate(version: PluginVersion, command: str, payload: Any) -> None:
    if version.status in (PluginVersion.Status.CHECKING, PluginVersion.Status.FAILED):
        raise PackageError(["this version has not passed its checks; it cannot be tried"])
    if not isinstance(payload, dict):
        raise PackageError(["payload: must be a JSON object, like {\"text\": \"hello\"}"])
    names = [c.get("name") for c in version.commands] or [
        c.get("name") for c in version.manifest.get("commands", [])]
    if command not in names:
        raise PackageError([f"command: {command!r} is not one of {', '.join(map(str, names))}"])
    if len(json.dumps(payload)) > TRY_MAX_PAYLOAD_CHARS:
        raise PackageError([f"payload: at most {TRY_MAX_PAYLOAD_CHARS} characters of JSON"])


def _try_execute(version: PluginVersion, command: str, payload: Any) -> TryResult:
    request = json.dumps({"entry": version.manifest.get("entry", ""), "command": command,
                          "payload": payload})
    files = {**version.files, "_autocoder_try.py": TRY_RUNNER, "_autocoder_try.json": request}
    try:
        result = sandbox_run(files, ["python", "-I", "_autocoder_try.py"], TRY_LIMITS,
                             collect=[TRY_RESULT])
    except (SandboxError, ValueError) as exc:
        return TryResult(ok=False, error=f"The sandbox could not run the plugin: {exc}")
    return _try_result(result)


def _try_result(result: Any) -> TryResult:
    stdout = (result.stdout or "")[-4000:]
    if result.timed_out:
        return TryResult(ok=False, error=f"Timed out after {TRY_LIMITS.timeout_s:g} seconds.",
                         stdout=stdout, duration_ms=result.duration_ms)
    if result.killed_reason == "cpu_limit":
        seconds = f"{TRY_LIMITS.cpu_s} second{'s' if TRY_LIMITS.cpu_s != 1 else ''}"
        return TryResult(ok=False, error=f"Stopped: it used all of its {seconds} of CPU time.",
                         stdout=stdout, duration_ms=result.duration_ms)
    raw = result.files.get(TRY_RESULT)
    if raw is None:
        why = result.killed_reason or f"exit code {result.exit_code}"
        return TryResult(ok=False, error=f"The plugin stopped without an answer ({why}).\n"
                         f"{(result.stderr or '')[-2000:]}".strip(), stdout=stdout,
                         duration_ms=result.duration_ms)
    try:
        answer = json.loads(raw)
    except ValueError:
        return TryResult(ok=False, error="The plugin's answer was not readable.", stdout=stdout)
    if answer.get("ok"):
        return TryResult(ok=True, output=answer.get("output"), stdout=stdout,
                         duration_ms=result.duration_ms)
    return TryResult(ok=False, error=str(answer.get("error", "")), stdout=stdout,
                     duration_ms=result.duration_ms)


# Runs inside the sandbox (-I: isolated, so only the workdir added below is importable).
TRY_RUNNER = '''import json, sys, traceback
sys.path.insert(0, ".")
RESULT = ".autocoder-try-result.json"


def answer(data):
    with open(RESULT, "w", encoding="utf-8") as stream:
        json.dump(data, stream)


def main():
    with open("_autocoder_try.json", encoding="utf-8") as stream:
        request = json.load(stream)
    module_name, _, class_name = request["entry"].partition(":")
    try:
        module = __import__(module_name, fromlist=[class_name])
        output = getattr(module, class_name)().on_command(request["command"], request["payload"])
    except Exception as exc:
        lines = traceback.format_exception(type(exc), exc, exc.__traceback__)
        answer({"ok": False, "error": "".join(lines[-6:])[-3000:]})
        return
    try:
        text = json.dumps({"ok": True, "output": output})
    except (TypeError, ValueError) as exc:
        answer({"ok": False, "error": "the command returned something that is not JSON: %s" % exc})
        return
    with open(RESULT, "w", encoding="utf-8") as stream:
        stream.write(text)


main()
'''


# -- helpers -------------------------------------------------------------------------------------


def _require_member(user: User, team: Team) -> None:
    if team.id not in viewer_for(user).member_of:
        raise PermissionDenied(f"You are not a member of team {team.slug}.")


def _require_reviewer(user: User, team: Team) -> None:
    if not viewer_for(user).can_review(team.id):
        raise PermissionDenied("Only the team's reviewers and admins can do this.")
