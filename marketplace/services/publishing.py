"""Publishing a succeeded run (its publish request is the gate), a reviewer's one-step
approve-and-publish, and the command line's publish of a directory.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import Count

from marketplace.checks import plugin_package_check
from marketplace.models import Plugin, PluginVersion
from marketplace.permissions import require_member
from marketplace.proposals import (
    PROPOSAL_KEY,
    PublishProposal,
    proposal_from_payload,
    proposal_of,
    proposal_wanted,
    publish_payload,
    with_summary,
    with_version,
)
from marketplace.selectors.visibility import viewer_for
from marketplace.services.gate import plugin_version_decide, publish_approval_decided
from marketplace.services.listing import plugin_settings_update
from marketplace.services.submissions import version_create
from marketplace.storage import artifact_dir_remove
from marketplace.validation import PackageError, files_from_directory
from runs import approval_rules
from runs.models import ApprovalRequest, ApprovalVote, LLMCall, Run
from teams.models import Membership, Team
from teams.services.audit import audit_record

if TYPE_CHECKING:
    from runs.services.approvals import VoteOutcome


def plugin_directory_publish(*, directory: Path, team: Team, approver: User,
                             visibility: str = "", category: str = "",
                             tags: Sequence[str] = (), changelog: str = "") -> PluginVersion:
    """The command line's publish: the upload checks on a directory, then `approver` (an admin
    of the team) opens the gate; both steps are in the audit log. An explicit visibility also
    applies to an existing plugin (the approver is an admin, who may change it)."""
    if viewer_for(approver).roles.get(team.id) != Membership.Role.ADMIN:
        raise PermissionDenied(f"{approver.get_username()} is not an admin of team {team.slug}")
    checked = plugin_package_check(team=team, files=files_from_directory(directory))
    version = version_create(team=team, checked=checked, source=PluginVersion.Source.CLI,
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
                           changelog: str = "", summary: str = "") -> PluginVersion:
    """Submit the result of a succeeded run. Its publish request is the gate, and it covers
    one combination of version, visibility and category (what the reviewer saw): a request
    approved for exactly the chosen one publishes at once; a pending request is changed to ask
    for it; after an approval of another combination a new request asks for it (the version
    waits on it). Tags, the changelog and `summary` (what the plugin does, in plugin.toml and
    the README: a change may change it) are free."""
    team = run.project.team
    require_member(user, team)
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
    files = with_summary(with_version(iteration.files, version), summary)
    checked = plugin_package_check(team=team, files=files,
                                   test_report=iteration.test_report,
                                   quality=iteration.quality)
    wanted = proposal_wanted(team=team, manifest=checked.manifest, visibility=visibility,
                             category=category)
    with transaction.atomic():
        approval = _publish_request_for(run=run, wanted=wanted, files=iteration.files, user=user)
        created = version_create(
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


def _models_used(run: Run) -> list[dict[str, object]]:
    rows = (LLMCall.objects.filter(run=run).values("role", "provider", "model")
            .annotate(calls=Count("id")).order_by("role", "provider", "model"))
    return [{"role": r["role"], "provider": r["provider"], "model": r["model"],
             "calls": r["calls"]} for r in rows]


def publish_request_approve(*, approval: ApprovalRequest, user: User, comment: str,
                            candidate: str, version: str, visibility: str,
                            category: str, summary: str = "") -> VoteOutcome:
    """Approve a run's publish request with the version, visibility and category the reviewer
    chose on its review page, and publish it: one step, no second form.

    The approval rules come first (a refused decision submits nothing); then the run's result
    is submitted as `plugin_version_publish` does (every check, the request changed to ask for
    exactly this combination) and the reviewer's approval is cast on that. When it settles the
    gate the version is live on return; with more approvals needed it waits for them. A
    PackageError (the plugin cannot be published so) decides nothing."""
    from runs.services.approvals import approval_vote_cast

    approve = ApprovalVote.Decision.APPROVE
    approval_rules.check_decision(approval, user=user, decision=approve, comment=comment,
                                  candidate=candidate)
    submitted: PluginVersion | None = None
    try:
        with transaction.atomic():
            submitted = plugin_version_publish(run=approval.run, user=user, version=version,
                                               visibility=visibility, category=category,
                                               summary=summary)
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
