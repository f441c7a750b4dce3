"""How generation is going: figures computed from runs with known outcomes equal the values
worked out by hand below, in a fixed number of queries, on the page and on the command line."""

from __future__ import annotations

import json
from datetime import date, datetime, timedelta
from decimal import Decimal
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from autocoder.lessons.models import Lesson, LessonOutcome
from projects.selectors.insights import Period, team_insights
from runs.models import ApprovalRequest, LLMCall, LoopEvent, Run
from teams.models import Membership, Team
from tests.factories import MembershipFactory, TeamFactory, UserFactory
from tests.projects.portal_factories import IterationFactory, ProjectFactory, RunFactory

pytestmark = pytest.mark.django_db

WEEK_A = date(2026, 11, 2)   # a Monday
WEEK_B = date(2026, 11, 9)
PERIOD = Period.of(WEEK_A, WEEK_B + timedelta(days=6))


def _at(day: date, hour: int = 9) -> datetime:
    return timezone.make_aware(datetime(day.year, day.month, day.day, hour))


def _run(team: Team, day: date, status: str, *, attempts: list[bool], minutes: float | None,
         tokens: tuple[int, int], **fields: Any) -> Run:
    """A run started on `day` whose attempts passed (True) or failed (False) in order."""
    started = _at(day)
    run = RunFactory(project=ProjectFactory(team=team), status=status, iteration=len(attempts),
                     tokens_prompt=tokens[0], tokens_completion=tokens[1], started_at=started,
                     finished_at=None if minutes is None else started + timedelta(minutes=minutes),
                     **fields)
    Run.objects.filter(pk=run.pk).update(created_at=started)
    for number, passed in enumerate(attempts, start=1):
        IterationFactory(run=run, number=number, succeeded=passed)
    return run


def _decided(run: Run, kind: str, status: str, by: Any) -> None:
    ApprovalRequest.objects.create(run=run, project=run.project, kind=kind, status=status,
                                   decided_by=by, decided_at=timezone.now())


def _lesson_outcomes(run: Run, helped: list[bool]) -> None:
    for verdict in helped:
        lesson = Lesson.objects.create(kind=Lesson.Kind.NEGATIVE, title="t", avoidance_rule="r",
                                       embedding=[0.0] * 384)
        LessonOutcome.objects.create(lesson=lesson, run_id=run.pk, helped=verdict)


@pytest.fixture
def history() -> dict[str, Any]:
    team = TeamFactory(slug="acme")
    lead = UserFactory(username="lead")
    MembershipFactory(team=team, user=lead, role=Membership.Role.ADMIN)
    # Week A: a success after one failed attempt (fixed by the loop alone), a first-time
    # success, a failure that was escalated (one human decision), a cancelled run.
    fixed = _run(team, WEEK_A, Run.Status.SUCCEEDED, attempts=[False, True], minutes=10,
                 tokens=(1000, 500), cost=Decimal("0.30"))
    _run(team, WEEK_A, Run.Status.SUCCEEDED, attempts=[True], minutes=4, tokens=(300, 100),
         cost=Decimal("0.05"))
    failed = _run(team, WEEK_A, Run.Status.FAILED, attempts=[False, False, False], minutes=60,
                  tokens=(2000, 1000), cost=Decimal("1.00"))
    _decided(failed, ApprovalRequest.Kind.ESCALATION, ApprovalRequest.Status.REJECTED, lead)
    _run(team, WEEK_A, Run.Status.CANCELLED, attempts=[], minutes=None, tokens=(0, 0))
    # Week B: a success a person rescued (an answered escalation) after a plan approval, and a
    # run still going after a failed attempt.
    rescued = _run(team, WEEK_B, Run.Status.SUCCEEDED, attempts=[False, False, True],
                   minutes=30, tokens=(4000, 2000), escalations_answered=1,
                   cost=Decimal("2.00"))
    _decided(rescued, ApprovalRequest.Kind.PLAN, ApprovalRequest.Status.APPROVED, lead)
    _decided(rescued, ApprovalRequest.Kind.ESCALATION, ApprovalRequest.Status.ANSWERED, lead)
    # Its model has no price: its tokens count, its cost cannot.
    _run(team, WEEK_B, Run.Status.RUNNING, attempts=[False], minutes=None, tokens=(100, 0),
         tokens_unpriced=100)
    for kind in ("no_progress", "no_progress", "repeated_error"):
        LoopEvent.objects.create(run=failed if kind == "no_progress" else fixed, iteration=1,
                                 type=kind, action="reset_context")
    _lesson_outcomes(fixed, [True, False])
    _lesson_outcomes(rescued, [True])
    # Not counted: another team's run in the period, and this team's run before it.
    _run(TeamFactory(slug="other"), WEEK_B, Run.Status.FAILED, attempts=[False], minutes=5,
         tokens=(9, 9), cost=Decimal("9"))
    _run(team, WEEK_A - timedelta(days=3), Run.Status.FAILED, attempts=[False], minutes=5,
         tokens=(9, 9))
    return {"team": team, "lead": lead}


def test_the_figures_equal_the_hand_computed_values(history: dict[str, Any]) -> None:
    insights = team_insights(team=history["team"], period=PERIOD)

    assert [week for week, _ in insights.weeks] == [WEEK_A, WEEK_B]
    a, b, total = insights.weeks[0][1], insights.weeks[1][1], insights.total
    assert (a.started, a.succeeded, a.failed, a.cancelled, a.escalated) == (4, 2, 1, 1, 1)
    assert a.build_success_rate == pytest.approx(2 / 3)
    assert (a.stumbled, a.auto_fixed, a.auto_fix_rate) == (2, 1, 0.5)
    assert (a.median_attempts, a.median_wall) == (1.5, timedelta(minutes=7))
    assert (a.human_decisions, a.decisions_per_run) == (1, 0.25)
    assert (a.tokens, a.tokens_per_success) == (4900, 2450)
    assert (a.lessons_retrieved, a.lessons_helped) == (2, 1)

    assert (b.started, b.succeeded, b.failed, b.escalated, b.stumbled, b.auto_fixed) == (
        2, 1, 0, 1, 1, 0)
    assert (b.build_success_rate, b.auto_fix_rate) == (1.0, 0.0)
    assert (b.median_attempts, b.median_wall) == (3.0, timedelta(minutes=30))
    assert (b.human_decisions, b.tokens, b.lessons_retrieved, b.lessons_helped) == (
        2, 6100, 1, 1)

    assert (total.started, total.succeeded, total.failed, total.escalated) == (6, 3, 1, 2)
    assert total.build_success_rate == 0.75
    assert total.auto_fix_rate == pytest.approx(1 / 3)
    assert (total.median_attempts, total.median_wall) == (2.0, timedelta(minutes=10))
    assert total.decisions_per_run == 0.5
    assert total.tokens_per_success == pytest.approx(11000 / 3)
    assert total.lessons_help_rate == pytest.approx(2 / 3)
    assert insights.loop_events == [("no_progress", 2), ("repeated_error", 1)]


def test_cost_per_succeeded_plugin_is_computed_next_to_tokens(
        history: dict[str, Any]) -> None:
    insights = team_insights(team=history["team"], period=PERIOD)
    a, b, total = insights.weeks[0][1], insights.weeks[1][1], insights.total
    # Week A: 0.30 + 0.05 + 1.00 for two successes.
    assert (a.cost, a.cost_per_success, a.tokens_unpriced) == (
        Decimal("1.35"), Decimal("0.675"), 0)
    assert a.cost_per_success_text == "0.6750 USD"
    # Week B: 2.00 for one success, and 100 tokens of a model without a price.
    assert (b.cost, b.tokens_unpriced) == (Decimal("2.00"), 100)
    assert b.cost_per_success_text == "2.00 USD (+100 tokens: no price set)"
    assert (total.cost, total.tokens_unpriced) == (Decimal("3.35"), 100)
    assert total.cost_per_success == Decimal("3.35") / 3
    report = insights.as_dict()["total"]
    assert (Decimal(report["cost"]), report["currency"], report["tokens_without_price"]) == (
        Decimal("3.35"), "USD", 100)


def test_a_team_whose_models_have_no_price_sees_tokens_only(client: Client) -> None:
    team = TeamFactory(slug="unpriced")
    lead = UserFactory()
    MembershipFactory(team=team, user=lead, role=Membership.Role.ADMIN)
    _run(team, WEEK_A, Run.Status.SUCCEEDED, attempts=[True], minutes=4, tokens=(300, 100),
         tokens_unpriced=400)
    total = team_insights(team=team, period=PERIOD).total
    assert (total.tokens_per_success, total.cost_per_success_text) == (400, "no price set")
    client.force_login(lead)
    html = client.get("/t/unpriced/insights/?since=2026-11-02&until=2026-11-15").content.decode()
    assert "Cost per plugin that succeeded" in html and "no price set" in html


def test_a_week_without_runs_is_shown_as_zeros_not_left_out(history: dict[str, Any]) -> None:
    period = Period.of(WEEK_A, WEEK_B + timedelta(days=13))
    weeks = team_insights(team=history["team"], period=period).weeks
    assert [week for week, _ in weeks] == [WEEK_A, WEEK_B, WEEK_B + timedelta(days=7)]
    last = weeks[-1][1]
    assert (last.started, last.build_success_rate, last.median_wall) == (0, None, None)


def test_the_number_of_queries_does_not_grow_with_the_runs(
        history: dict[str, Any], django_assert_num_queries: Any) -> None:
    with django_assert_num_queries(6):
        team_insights(team=history["team"], period=PERIOD)
    for _ in range(15):
        _run(history["team"], WEEK_B, Run.Status.SUCCEEDED, attempts=[False, True], minutes=3,
             tokens=(10, 10))
    with django_assert_num_queries(6):
        insights = team_insights(team=history["team"], period=PERIOD)
    assert insights.total.started == 21


def test_the_period_is_whole_weeks_and_at_most_two_years() -> None:
    period = Period.of(date(2026, 11, 4), date(2026, 11, 11))
    assert (period.since, period.until) == (WEEK_A, date(2026, 11, 15))
    assert len(Period.of(date(2020, 1, 1), date(2026, 11, 11)).weeks) == 104
    assert Period.last_weeks(4, today=date(2026, 11, 11)).weeks[-1] == WEEK_B


def test_the_team_report_command_prints_the_same_figures_as_json(
        history: dict[str, Any]) -> None:
    out = StringIO()
    call_command("team_report", "--team", "acme", "--since", "2026-11-02",
                 "--until", "2026-11-15", "--json", stdout=out)
    report = json.loads(out.getvalue())
    assert report["total"]["runs_started"] == 6
    assert report["total"]["build_success_rate"] == 0.75
    assert report["total"]["median_wall_s_to_success"] == 600.0
    assert [week["runs_started"] for week in report["weeks"]] == [4, 2]
    assert report["loop_events"] == {"no_progress": 2, "repeated_error": 1}


def test_the_team_report_command_in_words(history: dict[str, Any]) -> None:
    out = StringIO()
    call_command("team_report", "--team", "acme", "--since", "2026-11-02",
                 "--until", "2026-11-15", stdout=out)
    text = out.getvalue()
    assert "Build success rate: 75% (target 95%)" in text
    assert "Runs started: 6" in text
    assert "Cost per plugin that succeeded: 1.12 USD (+100 tokens: no price set)" in text


def test_the_page_shows_the_figures_with_charts_and_their_numbers(
        history: dict[str, Any], client: Client) -> None:
    client.force_login(history["lead"])
    page = client.get("/t/acme/insights/?since=2026-11-02&until=2026-11-15")
    html = page.content.decode()
    assert page.status_code == 200
    assert "How generation is going" in html
    assert html.count('<svg class="chart"') == 3 and 'role="img"' in html
    assert "75%" in html and "target 95%" in html
    # Every chart's numbers are in a table too.
    assert "<caption>Runs per week</caption>" in html
    assert "2026-11-02" in html or "2 Nov" in html


def test_replies_cut_at_their_length_limit_are_counted_per_model(
        history: dict[str, Any], client: Client) -> None:
    run = Run.objects.filter(project__team=history["team"]).first()
    assert run is not None
    for model, ended in (("gemma-3-270m", "length"), ("gemma-3-270m", "length"),
                         ("gemma-3-270m", "stop"), ("gpt-x", "stop")):
        LLMCall.objects.create(run=run, iteration=1, role="implementer", provider="openai",
                               model=model, finish_reason=ended)
    LLMCall.objects.create(run=run, iteration=1, role="implementer", provider="openai",
                           model="gpt-x", error="timed out")  # no reply: not counted
    insights = team_insights(team=history["team"], period=PERIOD)
    assert insights.models == [("gemma-3-270m", 3, 2), ("gpt-x", 1, 0)]
    assert insights.as_dict()["models"][0] == {"model": "gemma-3-270m", "replies": 3,
                                                "cut_at_limit": 2}
    client.force_login(history["lead"])
    html = client.get("/t/acme/insights/?since=2026-11-02&until=2026-11-15").content.decode()
    assert "Cut at the length limit" in html and "2 (67%)" in html


def test_the_page_is_for_members_only(history: dict[str, Any], client: Client) -> None:
    client.force_login(UserFactory())
    assert client.get("/t/acme/insights/").status_code == 404


def test_a_team_without_runs_gets_a_helpful_empty_page(client: Client) -> None:
    team = TeamFactory(slug="fresh")
    user = UserFactory()
    MembershipFactory(team=team, user=user, role=Membership.Role.REQUESTER)
    client.force_login(user)
    html = client.get("/t/fresh/insights/").content.decode()
    assert "No runs in this period" in html
    assert '<svg class="chart"' not in html
