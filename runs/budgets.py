"""What generation may cost a team, written once (docs/llm.md, "Budgets").

- A team may set a monthly budget (all its runs together, per calendar month of the site's
  TIME_ZONE) and a run budget (copied onto each run as it starts). Empty: no limit.
- Before every step that calls a model or runs tests, `budget_reached` says whether the run
  has reached one. Then the step does not start: the run waits for a budget request
  ("Budget reached: continue with N more?") that the team's admins decide
  (runs/approval_rules.py). Continuing adds N to the run's budget or to the month's allowance
  and the run goes on where it stopped; refusing stops it.
- Once spending crosses `WARN_AT` of a budget, the team's admins are told once
  (`budget_notices_claim`); allowing more makes the notice due again at the new level.

Costs come from the price table (autocoder/llm/pricing.py): calls to models without a price
cost nothing here, so a budget only limits priced models.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, Literal

from django.db.models import F
from django.utils import timezone

from autocoder.money import currency, money
from runs.models import MonthSpend, Run
from teams.models import Team

WARN_AT = Decimal("0.8")
CENT = Decimal("0.01")
# Without a run budget, allowing more for the month adds this share of the monthly budget.
MONTH_STEP = Decimal("0.1")

Scope = Literal["run", "month"]


@dataclass(frozen=True)
class BudgetState:
    """One budget of a run as it stands: what was spent against what is allowed."""

    scope: Scope
    spent: Decimal
    limit: Decimal
    # What continuing adds (the question's N).
    more: Decimal

    @property
    def reached(self) -> bool:
        return self.spent >= self.limit

    @property
    def share(self) -> int:
        """How much of the limit is spent, in whole percent."""
        return int(self.spent * 100 / self.limit) if self.limit else 100

    @property
    def spent_text(self) -> str:
        return money(self.spent)

    @property
    def limit_text(self) -> str:
        return money(self.limit)

    def question(self) -> str:
        return f"Budget reached: continue with {money(self.more)} more?"

    def explanation(self) -> str:
        """Plain words for the requester and the admins."""
        if self.scope == "run":
            return (f"This run has cost {money(self.spent)}, {self._against()} its budget of "
                    f"{money(self.limit)}. It waits until a team admin lets it spend "
                    f"{money(self.more)} more, or stops it.")
        return (f"The team's runs have cost {money(self.spent)} this month, {self._against()} "
                f"the monthly budget of {money(self.limit)}. This run waits until a team admin "
                f"allows {money(self.more)} more for the month, or stops it.")

    def _against(self) -> str:
        """How the spending stands against the limit, in words: "over", or "all of"."""
        return "over" if self.spent > self.limit else "all of"

    def payload(self) -> dict[str, Any]:
        """What a budget request stores (approval payloads are JSON: amounts as text)."""
        return {"budget": {"scope": self.scope, "spent": str(self.spent),
                           "limit": str(self.limit), "more": str(self.more),
                           "currency": currency()},
                "question": self.question(), "reason": self.explanation()}


def month_of(moment: datetime | None = None) -> date:
    """The first day of the month `moment` (default: now) falls in, in the site's time zone."""
    return timezone.localdate(moment).replace(day=1)


def spend_record(*, team_id: int, cost: Decimal) -> None:
    """Add what a model call cost to its team's month (called as each call is recorded)."""
    if cost <= 0:
        return
    month = month_of()
    rows = MonthSpend.objects.filter(team_id=team_id, month=month)
    if not rows.update(spent=F("spent") + cost):
        MonthSpend.objects.bulk_create([MonthSpend(team_id=team_id, month=month)],
                                       ignore_conflicts=True)
        rows.update(spent=F("spent") + cost)


def _rounded(amount: Decimal) -> Decimal:
    return max(amount.quantize(CENT, rounding=ROUND_HALF_UP), CENT)


def _more_for_month(team: Team) -> Decimal:
    if team.run_budget:
        return _rounded(team.run_budget)
    return _rounded((team.monthly_budget or CENT) * MONTH_STEP)


def run_budget_state(run: Run) -> BudgetState | None:
    """The run's own budget (None: the run has none)."""
    if run.budget is None:
        return None
    team = run.project.team
    more = team.run_budget if team.run_budget else run.budget
    return BudgetState(scope="run", spent=Decimal(run.cost), limit=Decimal(run.budget),
                       more=_rounded(Decimal(more)))


def month_budget_state(team: Team, *, month: date | None = None) -> BudgetState | None:
    """The team's budget for `month` (default: this one; None: the team has none)."""
    if team.monthly_budget is None:
        return None
    row = _month_row(team, month)
    return BudgetState(scope="month", spent=Decimal(row.spent),
                       limit=Decimal(team.monthly_budget) + Decimal(row.extra),
                       more=_more_for_month(team))


def month_spent(team: Team, *, month: date | None = None) -> Decimal:
    """What `team`'s runs have cost in `month` (default: this one)."""
    return Decimal(_month_row(team, month).spent)


def _month_row(team: Team, month: date | None) -> MonthSpend:
    """The team's row for `month` (default: this one); an unsaved empty one before any cost."""
    month = month or month_of()
    return (MonthSpend.objects.filter(team=team, month=month).first()
            or MonthSpend(team=team, month=month))


def budget_reached(run: Run) -> BudgetState | None:
    """The first budget `run` has reached (its own, then its team's month), or None."""
    for state in (run_budget_state(run), month_budget_state(run.project.team)):
        if state is not None and state.reached:
            return state
    return None


def budget_raise(run: Run, payload: dict[str, Any]) -> None:
    """Continue after a budget request: add its N to the run's budget (saved with the run by
    the caller) or to the month's allowance. The amounts are the request's, as the admin saw
    them; the notice at `WARN_AT` becomes due again at the new level."""
    asked = payload.get("budget") or {}
    more = Decimal(str(asked.get("more") or 0))
    if more <= 0:
        return
    if asked.get("scope") == "run":
        run.budget = (run.budget or Decimal(0)) + more
        run.budget_warned = False
        return
    team_id = run.project.team_id
    month = month_of()
    MonthSpend.objects.bulk_create([MonthSpend(team_id=team_id, month=month)],
                                   ignore_conflicts=True)
    MonthSpend.objects.filter(team_id=team_id, month=month).update(
        extra=F("extra") + more, warned=False)


def budget_notices_claim(run: Run) -> list[BudgetState]:
    """The budgets of `run` that crossed `WARN_AT` and whose admins have not heard yet; each
    is claimed by a conditional update, so two workers never both send the same notice."""
    due: list[BudgetState] = []
    own = run_budget_state(run)
    if own is not None and own.spent >= own.limit * WARN_AT:
        if Run.objects.filter(id=run.id, budget_warned=False).update(budget_warned=True):
            run.budget_warned = True
            due.append(own)
    month = month_budget_state(run.project.team)
    if month is not None and month.spent >= month.limit * WARN_AT:
        if MonthSpend.objects.filter(team_id=run.project.team_id, month=month_of(),
                                     warned=False).update(warned=True):
            due.append(month)
    return due


def budget_start(team: Team) -> Decimal | None:
    """The budget a new run of `team` gets."""
    return team.run_budget
