"""`manage.py team_report --team SLUG [--since DATE] [--until DATE] [--json]`: the figures of
the team page "How generation is going" (projects/selectors/insights.py) on the command line."""

from __future__ import annotations

import json
from datetime import date
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from projects.selectors.insights import (
    TARGET_AUTO_FIX,
    TARGET_BUILD_SUCCESS,
    Insights,
    Period,
    team_insights,
)
from projects.templatetags.insights import decimal, percent, span
from teams.models import Team


class Command(BaseCommand):
    help = "How generation is going for a team: runs, success and auto-fix rates, per week."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--team", required=True, help="the team's slug")
        parser.add_argument("--since", type=_day, help="first day (YYYY-MM-DD); default: "
                            "12 weeks ago")
        parser.add_argument("--until", type=_day, help="last day (YYYY-MM-DD); default: today")
        parser.add_argument("--json", action="store_true", help="one JSON object on stdout")

    def handle(self, *args: Any, **options: Any) -> None:
        team = Team.objects.filter(slug=options["team"]).first()
        if team is None:
            raise CommandError(f"no team {options['team']!r} (see the slugs on /teams/)")
        report = team_insights(team=team, period=_period(options["since"], options["until"]))
        if options["json"]:
            self.stdout.write(json.dumps(report.as_dict()))
        else:
            self.stdout.write("\n".join(_in_words(report)))


def _period(since: date | None, until: date | None) -> Period:
    if since is None and until is None:
        return Period.last_weeks(12)
    end = until or date.today()
    return Period.of(since or end, end)


def _day(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError as exc:
        raise CommandError(f"{text!r} is not a date like 2026-11-02") from exc


def _in_words(report: Insights) -> list[str]:
    t = report.total
    lines = [
        f"How generation is going for {report.team.name}, "
        f"{report.period.since:%Y-%m-%d} to {report.period.until:%Y-%m-%d}",
        f"Runs started: {t.started} (succeeded {t.succeeded}, failed {t.failed}, "
        f"cancelled {t.cancelled}, escalated {t.escalated})",
        f"Build success rate: {percent(t.build_success_rate)} "
        f"(target {percent(TARGET_BUILD_SUCCESS)})",
        f"Fixed by the loop itself: {percent(t.auto_fix_rate)} "
        f"(target {percent(TARGET_AUTO_FIX)})",
        f"Median attempts to success: {decimal(t.median_attempts)}; "
        f"median time to success: {span(t.median_wall)}",
        f"Decisions by people per run: {decimal(t.decisions_per_run, 2)}",
        f"Lessons used: {t.lessons_retrieved}, helped: {t.lessons_helped}",
        f"Tokens per plugin that succeeded: {decimal(t.tokens_per_success, 0)}",
        f"Cost per plugin that succeeded: {t.cost_per_success_text}",
        "Loop-detector events: " + (", ".join(f"{kind} {n}" for kind, n in report.loop_events)
                                    or "none"),
        "",
        "Week of      started  succeeded  failed  success rate  auto-fix",
    ]
    lines += [f"{week:%Y-%m-%d}  {f.started:>8}  {f.succeeded:>9}  {f.failed:>6}  "
              f"{percent(f.build_success_rate):>12}  {percent(f.auto_fix_rate):>8}"
              for week, f in report.weeks]
    return lines
