"""Budgets as people meet them: a team admin sets them in the team settings, every member sees
this month's spending on the team page, a budget request reaches the admins only and is
decided on its page or with `manage.py approve`, and the requester reads why the run waits.

The budget request is written by the real step service: a run whose cost reached its budget
asks before its next step (no model is called for that)."""

from __future__ import annotations

import html
import io
from decimal import Decimal

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from runs import approval_rules as rules
from runs import budgets
from runs.models import ApprovalRequest, Run
from runs.services import stepping
from teams.models import AuditEntry, Notification
from tests.projects.portal_factories import ProjectFactory, RunFactory
from tests.teams.conftest import Portal

pytestmark = pytest.mark.django_db


def run_at_its_budget(portal: Portal) -> tuple[Run, ApprovalRequest]:
    portal.team.run_budget = Decimal("2.00")
    portal.team.save()
    project = ProjectFactory(team=portal.team, requester=portal.requester, name="Rota helper")
    run = RunFactory(project=project, budget=Decimal("2.00"), cost=Decimal("2.10"),
                     step_token="step-1", started_by=portal.requester)
    with_approval = stepping.run_step_perform(run_id=run.pk, token="step-1", dispatch=None)
    assert with_approval is None, "the run waits instead of performing the step"
    run.refresh_from_db()
    approval = ApprovalRequest.objects.get(run=run, status=ApprovalRequest.Status.PENDING)
    return run, approval


def test_an_admin_sets_the_budgets_and_the_change_is_audited(portal: Portal) -> None:
    url = reverse("team_settings", args=[portal.team.slug])
    admin = portal.client(portal.admin)
    page = admin.get(url).content.decode()
    assert "Monthly budget (USD)" in page and "Budget per run (USD)" in page

    refused = admin.post(url, {"required_approvals": 1, "monthly_budget": "0",
                               "run_budget": "-3"})
    assert refused.status_code == 200
    assert html.unescape(refused.content.decode()).count("A budget is more than zero") == 2
    saved = admin.post(url, {"required_approvals": 1, "monthly_budget": "50",
                             "run_budget": "2.5"})
    assert saved.status_code == 302
    portal.team.refresh_from_db()
    assert (portal.team.monthly_budget, portal.team.run_budget) == (Decimal("50"),
                                                                   Decimal("2.5"))
    entry = AuditEntry.objects.get(action="team.settings_update")
    assert entry.after["monthly_budget"] == "50.00" and entry.before["run_budget"] is None

    assert admin.post(url, {"required_approvals": 1, "monthly_budget": "",
                            "run_budget": ""}).status_code == 302
    portal.team.refresh_from_db()
    assert portal.team.monthly_budget is None, "empty is no limit"
    for user in (portal.reviewer, portal.requester):
        assert portal.client(user).post(url, {"required_approvals": 1,
                                              "monthly_budget": "1"}).status_code in (403, 404)
    portal.team.refresh_from_db()
    assert portal.team.monthly_budget is None


def test_every_member_sees_this_months_spending_on_the_team_page(portal: Portal) -> None:
    url = reverse("team_detail", args=[portal.team.slug])
    budgets.spend_record(team_id=portal.team.pk, cost=Decimal("12.5"))
    page = portal.client(portal.requester).get(url).content.decode()
    assert "have cost <strong>12.50 USD</strong>. There is no monthly budget." in page

    portal.team.monthly_budget = Decimal("50")
    portal.team.save()
    page = portal.client(portal.requester).get(url).content.decode()
    assert "12.50 USD</strong> of its monthly budget of 50.00 USD (25%)" in page
    assert 'value="25"' in page


def test_a_budget_request_reaches_the_admins_and_the_requester_reads_why(
        portal: Portal, django_capture_on_commit_callbacks: object) -> None:
    run, approval = run_at_its_budget(portal)
    assert (run.status, approval.kind) == (Run.Status.AWAITING_APPROVAL, "budget")
    assert approval.payload["question"] == "Budget reached: continue with 2.00 USD more?"

    from projects.services.notifications import notifications_approval_requested
    notifications_approval_requested(approval=approval)
    notified = set(Notification.objects.filter(approval=approval)
                   .values_list("user__username", flat=True))
    assert notified == {"alice"}, "only the team's admins decide spending"
    message = Notification.objects.get(approval=approval).message
    assert "Rota helper" in message and "continue with 2.00 USD more?" in message

    run_page = portal.client(portal.requester).get(reverse("run_detail", args=[run.pk]))
    text = html.unescape(run_page.content.decode())
    assert "This run has cost 2.10 USD, over its budget of 2.00 USD" in text
    assert "waits for a team admin to decide whether it may spend more" in text


def test_the_admin_continues_on_the_requests_page(portal: Portal) -> None:
    run, approval = run_at_its_budget(portal)
    url = reverse("approval_detail", args=[approval.pk])

    as_reviewer = html.unescape(portal.client(portal.reviewer).get(url).content.decode())
    assert "alice can decide this request" in as_reviewer
    assert "Only admins of Acme decide whether a run may spend more." in as_reviewer
    assert 'name="decision"' not in as_reviewer

    page = html.unescape(portal.client(portal.admin).get(url).content.decode())
    assert "Continue with 2.00 USD more" in page and "Stop the run" in page
    assert "Budget reached: continue with 2.00 USD more?" in page
    sent = portal.client(portal.admin).post(reverse("approval_decide", args=[approval.pk]), {
        "decision": "approve", "comment": "", "candidate": rules.approval_candidate(approval)})
    assert sent.status_code == 302
    run.refresh_from_db()
    assert (run.status, run.budget) == (Run.Status.RUNNING, Decimal("4.00"))


def test_the_approve_command_applies_the_same_rule(portal: Portal) -> None:
    run, _ = run_at_its_budget(portal)
    with pytest.raises(CommandError, match="Only admins of Acme decide whether a run may "
                                           "spend more"):
        call_command("approve", str(run.pk), "--as", portal.reviewer.username, "--enqueue",
                     stdout=io.StringIO())
    call_command("approve", str(run.pk), "--as", portal.admin.username, "--enqueue",
                 stdout=io.StringIO())
    run.refresh_from_db()
    assert run.budget == Decimal("4.00") and run.status == Run.Status.RUNNING


def test_the_requester_who_is_admin_decides_their_own_runs_budget(portal: Portal) -> None:
    # A solo founder asks and pays: authorship does not bar a budget decision.
    portal.team.memberships.filter(user=portal.requester).update(role="admin")
    _, approval = run_at_its_budget(portal)
    assert rules.gate_refusal(membership=portal.team.memberships.get(user=portal.requester),
                              approval=approval) == ""
