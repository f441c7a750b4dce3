"""The portal's answers to the runs app (runs/signals.py).

The runs app sits below the portal and the marketplace and imports neither; what the portal does
when a run or an approval moves is connected here (the marketplace's own answers, to a decided
publish request and for a publish proposal, are in marketplace/receivers.py):
- a new approval request replaces the run's older ones and tells its deciders, once the step
  that created it has committed (a rolled-back step notifies nobody);
- votes, decisions and superseded requests are written to the audit log; a decision is
  announced to the requester;
- a run held for a broken part of the installation tells the team's admins, and so does
  generation that spent most of a budget.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models.signals import post_save
from django.dispatch import receiver

from autocoder.installation import InstallationFault
from runs import signals
from runs.approval_rules import Tally
from runs.budgets import BudgetState
from runs.models import ApprovalRequest, Run
from teams.models import Team
from teams.services.audit import audit_record


@receiver(post_save, sender=ApprovalRequest, dispatch_uid="projects.approval_requested")
def approval_requested(sender: type[ApprovalRequest], instance: ApprovalRequest, created: bool,
                       raw: bool = False, **kwargs: Any) -> None:
    if created and not raw:
        pk = instance.pk
        transaction.on_commit(lambda: _announce(pk), robust=True)


def _announce(pk: int) -> None:
    from projects.services.notifications import notifications_approval_requested
    from runs.services.approvals import approvals_supersede

    approval = (ApprovalRequest.objects.select_related("project__team", "run")
                .filter(pk=pk).first())
    if approval is None or approval.status != ApprovalRequest.Status.PENDING:
        return
    with transaction.atomic():
        approvals_supersede(approval=approval)
        notifications_approval_requested(approval=approval)


@receiver(signals.approvals_superseded, dispatch_uid="projects.approvals_superseded")
def approvals_superseded(sender: Any, approval: ApprovalRequest, replaced: list[int],
                         **kwargs: Any) -> None:
    from teams.services.notifications import notifications_review_settled

    notifications_review_settled(team_id=approval.project.team_id, target_model=ApprovalRequest,
                                 target_ids=list(replaced))
    for pk in replaced:
        audit_record(actor=None, action="approval.superseded", team=approval.project.team,
                     target_type="approvalrequest", target_id=str(pk),
                     target_repr=f"approval {pk} of run {approval.run_id}",
                     before={"status": "pending"},
                     after={"status": "stale", "replaced_by": approval.pk})


@receiver(signals.approval_voted, dispatch_uid="projects.approval_voted")
def approval_voted(sender: Any, approval: ApprovalRequest, user: User, decision: str,
                   comment: str, tally: Tally, decided: bool, **kwargs: Any) -> None:
    audit_record(
        actor=user, action=f"approval.{decision}", team=approval.project.team, target=approval,
        before={"status": ApprovalRequest.Status.PENDING},
        after={"status": approval.status if decided else ApprovalRequest.Status.PENDING,
               "kind": approval.kind, "iteration": approval.iteration, "comment": comment,
               "approvals": tally.approvals, "required": tally.needed,
               "project": approval.project.name, "run": approval.run_id})


@receiver(signals.approval_decided, dispatch_uid="projects.approval_decided")
def approval_decided(sender: Any, approval: ApprovalRequest, actor: User,
                     **kwargs: Any) -> None:
    from projects.services.notifications import notification_decision_send
    from teams.services.notifications import notifications_review_settled

    notification_decision_send(approval=approval, actor=actor)
    notifications_review_settled(team_id=approval.project.team_id, target_model=ApprovalRequest,
                                 target_ids=[approval.pk])


@receiver(signals.run_held, dispatch_uid="projects.run_held")
def run_held(sender: Any, team: Team, fault: InstallationFault, **kwargs: Any) -> None:
    from teams.services.notifications import notifications_installation_fault

    notifications_installation_fault(team=team, fault=fault)


@receiver(signals.budget_nearly_spent, dispatch_uid="projects.budget_nearly_spent")
def budget_nearly_spent(sender: Any, run: Run, state: BudgetState, **kwargs: Any) -> None:
    from django.urls import reverse

    from teams.services.notifications import notifications_budget_nearly_spent

    figures = f"{state.spent_text} of {state.limit_text}"
    message = (f"Run {run.pk} of “{run.project.name}” has spent {state.share}% of its budget "
               f"({figures})." if state.scope == "run" else
               f"The team's runs have spent {state.share}% of this month's budget ({figures}).")
    team = run.project.team
    url = (reverse("run_detail", args=[run.pk]) if state.scope == "run"
           else reverse("team_insights", args=[team.slug]))
    notifications_budget_nearly_spent(team=team, message=message, url=url)
