"""A realistic team board (for screenshots and browser tests): several projects in every
column, runs with iterations, a loop event, safety findings and pending approvals."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.utils import timezone

from runs.models import ApprovalRequest, Iteration, LoopEvent, Project, Run
from teams.models import Team
from tests.projects.portal_factories import PLUGIN_V1, PLUGIN_V2, findings_report

README = "# weekly-scheduler\n\nPlans a week of meetings from a list of days.\n"
TESTS = '''from weekly_scheduler.plugin import Plugin


def test_example_1():
    assert Plugin().on_command("generate-schedule", {"days": ["mon"]}) == {
        "slots": [{"day": "mon", "time": "09:00"}]}
'''
PLUGIN_V3 = '''class Plugin:
    """Plans one meeting per requested day, at nine."""

    def on_command(self, name: str, payload: dict) -> dict:
        if name != "generate-schedule":
            raise ValueError(f"unknown command: {name!r}")
        days = payload.get("days", [])
        if not isinstance(days, list):
            raise ValueError("days must be a list")
        return {"slots": [{"day": day, "time": "09:00"} for day in days]}
'''
OUTCOMES_FAIL = [
    {"nodeid": "tests/test_acceptance.py::test_example_1", "outcome": "failed",
     "message": "AssertionError: assert {'slots': []} == {'slots': [{'day': 'mon', ...}]}"},
    {"nodeid": "tests/test_acceptance.py::test_example_2", "outcome": "failed",
     "message": "AssertionError: assert {'slots': []} == {'slots': [{'day': 'tue', ...}]}"},
    {"nodeid": "tests/test_generated.py::test_unknown_command", "outcome": "passed",
     "message": ""},
]
OUTCOMES_PASS = [dict(o, outcome="passed", message="") for o in OUTCOMES_FAIL]


@dataclass
class Demo:
    run: Run
    change: ApprovalRequest
    queued: list[Project]


def _project(team: Team, requester: Any, name: str, status: str, **fields: Any) -> Project:
    return Project.objects.create(team=team, requester=requester, name=name, status=status,
                                  spec={"name": name}, **fields)


def _run(project: Project, **fields: Any) -> Run:
    return Run.objects.create(project=project, started_at=timezone.now(), **fields)


def build(team: Team, requester: Any, colleague: Any) -> Demo:
    files = {"plugin.toml": '[plugin]\nname = "weekly-scheduler"\n', "README.md": README,
             "tests/test_acceptance.py": TESTS}
    project = _project(team, requester, "weekly-scheduler", Project.Status.AWAITING_APPROVAL)
    run = _run(project, status=Run.Status.AWAITING_APPROVAL, phase=Run.Phase.REFLECT,
               iteration=3, max_iterations=8, tokens_prompt=18_400, tokens_completion=5_150,
               plan="1. Read the days.\n2. One slot per day at 09:00.\n3. Refuse bad input.")
    specs = [(PLUGIN_V1, 1 / 3, False, "pass", {}, OUTCOMES_FAIL),
             (PLUGIN_V2, 1.0, True, "review", findings_report(), OUTCOMES_PASS),
             (PLUGIN_V3, 1.0, True, "pass", {"verdict": "pass", "findings": []}, OUTCOMES_PASS)]
    for number, (code, rate, ok, verdict, safety, outcomes) in enumerate(specs, start=1):
        passed = sum(o["outcome"] == "passed" for o in outcomes)
        Iteration.objects.create(
            run=run, number=number, files={**files, "weekly_scheduler/plugin.py": code},
            pass_rate=rate, acceptance_passed=ok, tests_ran=True, safety_verdict=verdict,
            safety_report=safety, tokens=7_000 + 500 * number,
            diff_stats={"added": 4 * number, "removed": number, "files": 1},
            test_report={"passed": passed, "failed": len(outcomes) - passed, "errors": 0,
                         "pass_rate": rate, "outcomes": outcomes},
            timings={"plan": 2100, "implement": 5400, "sandbox": 1900},
            reflection="The schedule was empty: the days were never read." if number == 1
            else "", error_signature="AssertionError: assert <dict> == <dict>" if number == 1
            else "")
    LoopEvent.objects.create(run=run, iteration=2, type="no_progress", confidence=0.72,
                             occurrences=2, action="try_alternative", signature="pass count",
                             reason="the pass count did not change for two iterations")
    change = ApprovalRequest.objects.create(
        run=run, project=project, kind=ApprovalRequest.Kind.CHANGE, iteration=3, payload={
            "reasons": ["the safety gate asked for a review in attempt 2",
                        "the plugin asks for no permissions"],
            "reasoning": "Removed the shell call flagged in attempt 2 and validated the days.",
            "plan": run.plan, "test_report": Iteration.objects.get(run=run, number=3).test_report,
            "safety": {"verdict": "pass", "findings": []}})
    others = [("invoice-parser", Project.Status.GENERATING, 2, 0.5),
              ("csv-cleaner", Project.Status.GENERATING, 1, 0.25),
              ("slack-digest", Project.Status.SUCCEEDED, 4, 1.0),
              ("timesheet-export", Project.Status.PUBLISHED, 3, 1.0),
              ("pdf-merger", Project.Status.ESCALATED, 5, 0.4),
              ("calendar-sync", Project.Status.FAILED, 8, 0.6)]
    for name, status, iterations, rate in others:
        other = _run(_project(team, colleague, name, status), iteration=iterations,
                     status=Run.Status.RUNNING, tokens_prompt=3_000 * iterations,
                     tokens_completion=800 * iterations)
        Iteration.objects.create(run=other, number=iterations, pass_rate=rate, files={})
    _project(team, requester, "expense-report", Project.Status.INTERVIEWING)
    queued = [_project(team, requester if i % 2 else colleague, name, Project.Status.QUEUED,
                       queue_position=i + 1)
              for i, name in enumerate(["meeting-notes", "crm-export", "holiday-planner"])]
    return Demo(run=run, change=change, queued=queued)
