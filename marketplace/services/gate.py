"""The publish gate: a reviewer's decision on a pending version, the settling of the versions
waiting on a run's publish request, and what publishing or rejecting a version does.

An upload or a command-line publish waits for the team's reviewers: `required_approvals`
approvals publish it, one rejection rejects it. A version from a generation run waits on the
run's publish approval request; `publish_approval_decided` settles it.
"""

from __future__ import annotations

import logging

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from marketplace.history import record_version_safe
from marketplace.inbox import upload_url
from marketplace.models import Plugin, PluginVersion, VersionDecision
from marketplace.proposals import PublishProposal, proposal_from_payload
from marketplace.selectors.gate import version_decision_refusal
from marketplace.selectors.visibility import can_see, viewer_for
from marketplace.services.listing import plugin_listing_refresh
from marketplace.signals import version_published
from projects.services.board import team_event_on_commit
from runs import approval_rules
from runs.models import ApprovalRequest, Project
from runs.services.project_status import project_published
from teams.services.audit import audit_record
from teams.services.notifications import (
    decision_message,
    notification_decided_send,
    notifications_review_requested,
    notifications_review_settled,
)

logger = logging.getLogger(__name__)

NOT_AS_APPROVED = ("its version, visibility or category is not what the publish request"
                   " approved; publish the run again to ask the reviewers for it")


class DecisionConflict(Exception):
    """The version was already decided (by someone else, or the gate already closed)."""


def plugin_version_decide(*, version: PluginVersion, user: User, approve: bool,
                          comment: str = "") -> PluginVersion:
    """A reviewer's decision on a pending version, under the approval rules
    (runs/approval_rules.py) like every gate. Raises ApprovalRefused (a PermissionDenied)
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


def deciders_notify(version: PluginVersion) -> None:
    """Put a new upload in the bell of everyone the approval rules let decide it."""
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
    plugin = version.plugin
    notifications_review_settled(team_id=plugin.team_id, url=upload_url(version))
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
    from runs.services.approvals import approval_vote_cast

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


def _project_mark_published(*, run_id: int) -> None:
    project = project_published(run_id=run_id)
    if project is not None:
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
        _project_mark_published(run_id=version.run_id)
    audit_record(actor=approver, action="plugin.publish", team=plugin.team, target=version,
                 after={"plugin": plugin.name, "version": version.version,
                        "visibility": plugin.visibility,
                        "files": list(version.artifacts.values_list("filename", "sha256"))})
    # The plugin's git history gets the version once it is committed (a failure is logged).
    version_id = version.pk
    transaction.on_commit(lambda: record_version_safe(version_id))
    # The apps above are told once it is committed (the tools: change requests shipped,
    # upgrades waiting); a receiver's failure is logged, the version stays published.
    transaction.on_commit(lambda: _published_announce(version_id, approver))


def _published_announce(version_id: int, approver: User | None) -> None:
    version = PluginVersion.objects.select_related("plugin", "run__project").get(pk=version_id)
    for receiver, answer in version_published.send_robust(sender=PluginVersion, version=version,
                                                          approver=approver):
        if isinstance(answer, Exception):
            logger.error("after publishing %s %s, %r failed", version.plugin.name,
                         version.version, receiver, exc_info=answer)
