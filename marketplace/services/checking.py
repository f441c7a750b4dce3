"""The checks of an upload, on a worker (the `plugin_version_check` actor).

One worker at a time checks a version: it claims it (check_token, and claimed_by naming the
worker by its heartbeat) with a guarded update; the outcome is recorded only under that claim.
A worker killed mid-check leaves the claim: the watchdog sees its heartbeat gone and sends the
check again (`plugin_checks_orphaned_kick`), and the next worker checks from the start.
"""

from __future__ import annotations

import logging
import uuid

from django.db import transaction
from django.utils import timezone

from autocoder import durable, realtime
from marketplace.checks import CheckedPlugin, plugin_slow_check
from marketplace.models import Artifact, PluginVersion
from marketplace.selectors.visibility import event_roles
from marketplace.services.gate import deciders_notify
from marketplace.services.submissions import artifacts_store, summary_embedding_of
from marketplace.storage import artifact_dir_remove
from marketplace.validation import PackageError, check_plugin_files
from teams.services.audit import audit_record

logger = logging.getLogger(__name__)


# The upload checks' actor (marketplace/tasks.py), named for the outbox.
CHECK_ACTOR = "plugin_version_check"

# A check started this often without finishing fails (a plugin that kills its worker).
CHECK_MAX_ATTEMPTS = 3

# Longer than any check takes (tests up to 120 s, the safety gate, the build, a busy queue).
CHECK_STALL_S = 15 * 60


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
        durable.release(PluginVersion.objects.filter(pk=version_id, check_token=token),
                        check_token="")
        raise


def _check_claim(version_id: int) -> str | None:
    token = uuid.uuid4().hex
    won = durable.claim(PluginVersion.objects.filter(
        pk=version_id, status=PluginVersion.Status.CHECKING, check_token=""),
        attempts="check_attempts", started="check_started_at", check_token=token)
    return token if won else None


def _check_progress(version: PluginVersion, token: str, step: str) -> None:
    if PluginVersion.objects.filter(pk=version.pk, check_token=token).update(check_step=step):
        _check_event(version, step=step)


def _check_fail(version: PluginVersion, token: str, errors: list[str]) -> PluginVersion | None:
    with transaction.atomic():
        won = durable.release(PluginVersion.objects.filter(
            pk=version.pk, status=PluginVersion.Status.CHECKING, check_token=token),
            status=PluginVersion.Status.FAILED, check_errors=list(errors),
            check_step=PluginVersion.CheckStep.DONE, check_token="", checked_at=timezone.now())
        if not won:
            return None
        audit_record(actor=None, action="plugin.check", team=version.plugin.team,
                     target=version, after={"outcome": "failed", "errors": errors[:20]})
        _check_event(version, step="failed")
    version.refresh_from_db()
    return version


def _check_pass(version: PluginVersion, token: str, checked: CheckedPlugin) -> PluginVersion | None:
    plugin = version.plugin
    embedding = summary_embedding_of(checked.manifest.name, checked.manifest.summary,
                                     checked.manifest.commands)
    try:
        with transaction.atomic():
            locked = (PluginVersion.objects.select_for_update()
                      .filter(pk=version.pk, status=PluginVersion.Status.CHECKING,
                              check_token=token).first())
            if locked is None:  # taken over meanwhile: the other check's outcome counts
                return None
            Artifact.objects.filter(version=locked).delete()  # a killed check's leftovers
            artifacts_store(plugin, locked, checked.artifacts)
            durable.release(
                PluginVersion.objects.filter(pk=locked.pk),
                status=PluginVersion.Status.PENDING, check_step=PluginVersion.CheckStep.DONE,
                check_errors=[], check_token="", checked_at=timezone.now(),
                readme_html=checked.readme_html, requires_python=checked.requires_python,
                test_report=checked.tests, quality=checked.quality, safety_report=checked.safety,
                safety_verdict=checked.safety["verdict"], summary_embedding=embedding)
            audit_record(actor=None, action="plugin.check", team=plugin.team, target=locked,
                         after={"outcome": "passed", "safety": checked.safety["verdict"],
                                "files": [(a.filename, a.sha256) for a in checked.artifacts]})
    except BaseException:
        artifact_dir_remove(plugin.normalized_name, version.pk)
        raise
    version.refresh_from_db()
    deciders_notify(version)
    _check_event(version, step="passed")
    return version


def _check_event(version: PluginVersion, *, step: str) -> None:
    """Tell the team's open pages (the version page listens) that the check moved on, once
    committed; a private plugin's only to those who see it. Best effort: the page also asks
    every few seconds."""
    data = {"version": version.pk, "plugin": version.plugin.name, "step": step}
    roles = event_roles(version.plugin)

    def send() -> None:
        try:
            realtime.publish(realtime.team_group(version.plugin.team_id),
                             {"kind": "plugin_version.check", "data": data}, roles=roles)
        except Exception:  # Redis down: the page's poll shows it anyway
            logger.warning("could not publish the check event of version %s", version.pk)

    transaction.on_commit(send)


def plugin_checks_orphaned_kick(*, live: set[str] | None = None) -> list[int]:
    """The watchdog's quick sweep: send again the check of every version whose claiming
    worker's heartbeat has expired (killed mid-check); one sweeper wins each (guarded update).
    Returns the versions sent again."""
    kicked = durable.orphans_sweep(
        PluginVersion.objects.filter(status=PluginVersion.Status.CHECKING), _check_resend,
        live=live)
    if kicked:
        logger.warning("sent again the checks of versions %s (their worker died)", kicked)
    return kicked


def plugin_checks_stalled_kick(*, stalled_for_s: float | None = None) -> list[int]:
    """The watchdog's slow sweep: send again the check of every version that has been
    "being checked" for longer than any check takes (a lost message, or a process checking
    in-line that died). Returns the versions sent again."""
    kicked = durable.stalled_sweep(
        PluginVersion.objects.filter(status=PluginVersion.Status.CHECKING), _check_resend,
        since="check_started_at",
        older_than_s=stalled_for_s if stalled_for_s is not None else CHECK_STALL_S)
    if kicked:
        logger.warning("sent again the checks of stalled versions %s", kicked)
    return kicked


def _check_resend(stale: durable.Stale[PluginVersion]) -> bool:
    with transaction.atomic():
        version = stale.guard.select_for_update(skip_locked=True).first()
        if version is None or not durable.release(
                stale.guard.filter(pk=version.pk), check_token="",
                check_step=PluginVersion.CheckStep.QUEUED, check_started_at=timezone.now()):
            return False
        durable.outbox_message_queue(actor=CHECK_ACTOR, args=[version.pk])
        _check_event(version, step="queued")
    return True
