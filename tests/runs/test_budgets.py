"""Money budgets (runs/budgets.py, docs/llm.md "Budgets"): a run that reaches its own budget or
its team's monthly budget pauses with a budget request instead of failing; a team admin lets it
spend more (it goes on where it stopped) or stops it; at 80% the team's admins hear once.

The runs are the scripted provider's, priced through the real price table (model "script")
and driven through the real services, sandbox and database."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest

from autocoder.llm.models import ModelPrice
from autocoder.llm.scripted import SCRIPTED_MODEL
from runs import budgets
from runs.approval_rules import MayNotDecide
from runs.models import ApprovalRequest, MonthSpend, Project, Run
from runs.selectors import results
from runs.selectors.approvals import approvals_awaiting
from runs.selectors.runs import run_overview
from runs.services import deciding, driving
from teams.models import Notification
from tests.factories import MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin(people: dict[str, Any]) -> Any:
    user = UserFactory(username="budget-admin")
    MembershipFactory(team=people["team"], user=user, role="admin")
    return user


@pytest.fixture
def priced(db: None) -> ModelPrice:
    # The scripted provider counts words as tokens: a call of about a thousand words costs
    # about 0.10 at 100 per million.
    price: ModelPrice = ModelPrice.objects.create(model=SCRIPTED_MODEL,
                                                  prompt_per_million=Decimal("100"),
                                                  completion_per_million=Decimal("100"))
    return price


def drive(run: Run) -> Run:
    return driving.run_drive(run_id=run.id)


def pending(run: Run) -> ApprovalRequest:
    approval = results.pending_approval(run)
    assert approval is not None, f"run {run.id} has no pending request ({run.status})"
    return approval


def decide(approval: ApprovalRequest, user: Any, decision: str, comment: str = "") -> Any:
    return deciding.approval_decide(approval=approval, user=user, decision=decision,
                                    comment=comment, dispatch=None)


def budget_notices(user: Any) -> list[Notification]:
    return list(Notification.objects.filter(user=user, kind=Notification.Kind.BUDGET))


@pytest.mark.slow
def test_a_run_at_its_budget_pauses_and_continuing_resumes_it_where_it_stopped(
        start_run: Callable[..., Run], people: dict[str, Any], admin: Any,
        priced: ModelPrice) -> None:
    team = people["team"]
    team.run_budget = Decimal("0.15")
    team.save()
    run = drive(start_run("success"))

    assert run.budget == Decimal("0.15")
    assert (run.status, run.project.status) == (Run.Status.AWAITING_APPROVAL,
                                                Project.Status.AWAITING_APPROVAL)
    request = pending(run)
    assert request.kind == ApprovalRequest.Kind.BUDGET
    assert request.payload["question"] == "Budget reached: continue with 0.15 USD more?"
    assert run.cost >= run.budget and run.error == ""
    stopped_at = run.phase
    assert stopped_at != Run.Phase.PLAN, "the plan was written before the budget ran out"
    headline = run_overview(run).summary.headline
    assert "used its budget" in headline and "team admin" in headline

    # Spending is the team's money: a reviewer does not decide it, an admin does.
    with pytest.raises(MayNotDecide, match="Only admins"):
        decide(request, people["reviewer"], "approve")
    assert [a.pk for a in approvals_awaiting(admin)] == [request.pk]
    assert request.pk not in [a.pk for a in approvals_awaiting(people["reviewer"])]
    assert budget_notices(admin), "the admin heard at 80%"
    assert not budget_notices(people["reviewer"]) and not budget_notices(people["requester"])

    decide(request, admin, "approve")
    resumed = Run.objects.get(id=run.id)
    assert (resumed.status, resumed.phase) == (Run.Status.RUNNING, stopped_at)
    assert resumed.budget == Decimal("0.30")

    # It goes on, asking again each time it reaches the raised budget, and succeeds.
    raised = 1
    run = drive(resumed)
    while run.status == Run.Status.AWAITING_APPROVAL and pending(run).kind == "budget":
        decide(pending(run), admin, "approve")
        raised += 1
        run = drive(Run.objects.get(id=run.id))
        assert raised < 10, "the run never finished"
    assert run.status == Run.Status.SUCCEEDED
    assert run.budget == Decimal("0.15") * (raised + 1)
    assert run.approvals.filter(kind="budget", status="approved").count() == raised


def test_refusing_more_stops_the_run_in_plain_words(
        start_run: Callable[..., Run], people: dict[str, Any], admin: Any,
        priced: ModelPrice) -> None:
    team = people["team"]
    team.run_budget = Decimal("0.01")
    team.save()
    run = drive(start_run("success"))
    decide(pending(run), admin, "reject", "Too dear for a greeter.")

    final = drive(Run.objects.get(id=run.id))
    assert final.status == Run.Status.ABORTED
    assert "stopped at its budget by budget-admin" in final.error
    assert "Too dear" in final.error
    assert "chose not to spend more" in run_overview(final).summary.headline
    assert final.project.status == Project.Status.FAILED


def test_the_team_month_pauses_its_runs_and_continuing_raises_the_month(
        start_run: Callable[..., Run], people: dict[str, Any], admin: Any,
        priced: ModelPrice) -> None:
    team = people["team"]
    team.monthly_budget = Decimal("10.00")
    team.save()
    # Earlier runs this month spent 9.99: the next model call reaches the budget.
    budgets.spend_record(team_id=team.pk, cost=Decimal("9.99"))
    assert not budget_notices(admin), "crossing 80% is noticed when a run's step commits"

    run = drive(start_run("success"))

    request = pending(run)
    assert request.payload["budget"]["scope"] == "month"
    assert request.payload["question"] == "Budget reached: continue with 1.00 USD more?"
    assert "monthly budget of 10.00 USD" in request.payload["reason"]
    notices = budget_notices(admin)
    assert len(notices) == 1 and "this month's budget" in notices[0].message
    spent = MonthSpend.objects.get(team=team, month=budgets.month_of()).spent
    assert spent == Decimal("9.99") + run.cost

    decide(request, admin, "approve")
    month = MonthSpend.objects.get(team=team, month=budgets.month_of())
    assert month.extra == Decimal("1.00") and not month.warned
    assert Run.objects.get(id=run.id).status == Run.Status.RUNNING


def test_the_notice_at_80_percent_is_sent_once_per_budget_level(
        start_run: Callable[..., Run], people: dict[str, Any], admin: Any) -> None:
    team = people["team"]
    team.run_budget = Decimal("1.00")
    team.save()
    run = start_run("success")
    run = Run.objects.select_related("project__team").get(id=run.id)

    run.cost = Decimal("0.79")
    assert budgets.budget_notices_claim(run) == []
    run.cost = Decimal("0.80")
    [state] = budgets.budget_notices_claim(run)
    assert (state.scope, state.share) == ("run", 80)
    run.cost = Decimal("0.95")
    assert budgets.budget_notices_claim(run) == [], "once per level"

    budgets.budget_raise(run, {"budget": {"scope": "run", "more": "1.00"}})
    assert run.budget == Decimal("2.00")
    run.save()
    run.cost = Decimal("1.60")
    assert len(budgets.budget_notices_claim(run)) == 1, "the raised budget warns again"


def test_a_runs_budget_is_the_teams_when_it_started(
        start_run: Callable[..., Run], people: dict[str, Any]) -> None:
    assert start_run("success").budget is None, "no run budget: no limit"
    team = people["team"]
    team.run_budget = Decimal("2.50")
    team.save()
    later = start_run("success")
    assert later.budget == Decimal("2.50")
    team.run_budget = Decimal("9.00")
    team.save()
    later.refresh_from_db()
    assert later.budget == Decimal("2.50"), "a started run keeps its budget"


def test_spending_is_counted_per_month_in_one_row(people: dict[str, Any]) -> None:
    team = people["team"]
    for _ in range(3):
        budgets.spend_record(team_id=team.pk, cost=Decimal("0.25"))
    budgets.spend_record(team_id=team.pk, cost=Decimal("0"))
    assert MonthSpend.objects.filter(team=team).count() == 1
    assert budgets.month_spent(team) == Decimal("0.75")
    assert budgets.month_budget_state(team) is None, "no monthly budget set"
    team.monthly_budget = Decimal("1.00")
    state = budgets.month_budget_state(team)
    assert state is not None and (state.share, state.reached) == (75, False)
