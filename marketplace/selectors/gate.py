"""The publish gate as a viewer meets it: may they decide a pending version, who can, and
which versions wait for them.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser, User
from django.db.models import QuerySet

from marketplace.models import PluginVersion
from marketplace.selectors.visibility import Viewer, visible_q
from runs import approval_rules
from runs.selectors.approvals import who_decides
from teams.models import Membership


def version_decision_refusal(*, version: PluginVersion, user: AbstractBaseUser) -> str:
    """Why `user` may not decide the uploaded `version` now ("" when they may): the gates' rule
    (approval_rules.upload_refusal), with whoever submitted the version as the author of the
    change. Asked at every vote, again when the votes are counted, and by the version's page
    before it offers the decision buttons."""
    team = version.plugin.team
    membership = Membership.objects.filter(team=team, user_id=user.pk).first()
    return approval_rules.upload_refusal(membership=membership, team=team,
                                         submitted_by_id=version.submitted_by_id)


@dataclass(frozen=True)
class VersionGate:
    """What a pending version's page offers the viewer: the decision buttons when the approval
    rules let them decide, otherwise a plain line saying who can and who hears about it."""

    may_decide: bool
    who_decides: str


def version_gate(version: PluginVersion, user: AbstractBaseUser) -> VersionGate:
    """The gate of a pending version as `user` meets it: an upload's own gate, or the run's
    publish request for a generated version."""
    approval = version.approval
    author: User | None
    if approval is not None:
        membership = Membership.objects.filter(team_id=approval.project.team_id,
                                               user_id=user.pk).first()
        refusal = approval_rules.gate_refusal(membership=membership, approval=approval)
        deciders = approval_rules.gate_deciders(approval) if refusal else []
        author = approval.project.requester
        thing = "publish request"
    else:
        refusal = version_decision_refusal(version=version, user=user)
        deciders = (approval_rules.upload_deciders(team=version.plugin.team,
                                                   submitted_by_id=version.submitted_by_id)
                    if refusal else [])
        author, thing = version.submitted_by, "version"
    if not refusal:
        return VersionGate(may_decide=True, who_decides="")
    return VersionGate(may_decide=False, who_decides=who_decides(
        deciders=deciders, team_name=version.plugin.team.name, thing=thing,
        viewer_id=user.pk, author=author))


def pending_versions_for(viewer: Viewer) -> QuerySet[PluginVersion]:
    """Versions awaiting the gate in teams where the viewer is a member (reviewers decide), of
    plugins the viewer may see: a requester does not learn the names of private plugins."""
    return (PluginVersion.objects.filter(visible_q(viewer, "plugin__"),
                                         status=PluginVersion.Status.PENDING,
                                         plugin__team_id__in=sorted(viewer.member_of))
            .select_related("plugin__team", "submitted_by").defer("files")
            .order_by("created_at"))
