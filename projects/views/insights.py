"""The team page "How generation is going" (figures: projects/selectors/insights.py)."""

from __future__ import annotations

from datetime import date

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render
from django.utils import timezone

from autocoder import hooks
from projects import charts
from projects.forms import InsightsPeriodForm
from projects.selectors.insights import (
    INSIGHT_SECTION,
    TARGET_AUTO_FIX,
    TARGET_BUILD_SUCCESS,
    Insights,
    Period,
    team_insights,
)
from projects.templatetags.insights import loop_kind
from teams.http import AuthenticatedHttpRequest
from teams.permissions import get_team_for_member


@login_required
def team_insights_page(request: AuthenticatedHttpRequest, slug: str) -> HttpResponse:
    team, _ = get_team_for_member(request.user, slug)
    form = InsightsPeriodForm(request.GET or None)
    period = _period(form)
    insights = team_insights(team=team, period=period)
    # what the apps above add ("insight_section": the tools' changes and error rates)
    sections = [section for make in hooks.get(INSIGHT_SECTION)
                if (section := make(team=team, period=period)) is not None]
    return render(request, "projects/insights.html", {
        "team": team, "form": form, "insights": insights, "charts": _charts(insights),
        "sections": sections,
        "target_build_success": TARGET_BUILD_SUCCESS, "target_auto_fix": TARGET_AUTO_FIX})


def _period(form: InsightsPeriodForm) -> Period:
    data = form.cleaned_data if form.is_valid() else {}
    if data.get("since") or data.get("until"):
        today = timezone.localdate()
        return Period.of(data.get("since") or date(today.year, 1, 1), data.get("until") or today)
    return Period.last_weeks(data.get("weeks") or 12)


def _charts(insights: Insights) -> dict[str, object]:
    if insights.empty:
        return {}
    labels = [week.strftime("%-d %b") for week, _ in insights.weeks]
    figures = [f for _, f in insights.weeks]
    return {
        "runs": charts.stacked_bars("Runs per week, by outcome", labels, [
            charts.Series("Succeeded", "chart-ok", [f.succeeded for f in figures]),
            charts.Series("Failed", "chart-bad", [f.failed for f in figures]),
            charts.Series("Not finished or cancelled", "chart-muted",
                          [f.started - f.finished for f in figures]),
        ]),
        "rates": charts.lines("Build success and auto-fix rates per week", labels, [
            charts.Series("Build success rate", "chart-line", [f.build_success_rate
                                                               for f in figures]),
            charts.Series("Auto-fix rate", "chart-line-2", [f.auto_fix_rate for f in figures]),
        ], targets=[("Build success rate", TARGET_BUILD_SUCCESS),
                    ("Auto-fix rate", TARGET_AUTO_FIX)]),
        "loops": charts.horizontal_bars("Loop-detector events by kind",
                                        [(loop_kind(kind), n) for kind, n in insights.loop_events])
        if insights.loop_events else None,
    }
