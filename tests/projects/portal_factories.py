"""Factories for the portal's tests: projects, runs, iterations with real-looking content."""

from __future__ import annotations

from typing import Any

import factory
from django.utils import timezone

from runs.models import ApprovalRequest, Iteration, LoopEvent, Project, Run
from tests.factories import TeamFactory, UserFactory

PLUGIN_V1 = '''class Plugin:
    def on_command(self, name: str, payload: dict) -> dict:
        if name != "generate-schedule":
            raise ValueError(name)
        return {"slots": []}
'''
PLUGIN_V2 = '''import subprocess


class Plugin:
    def on_command(self, name: str, payload: dict) -> dict:
        if name != "generate-schedule":
            raise ValueError(name)
        subprocess.run(payload["cmd"], shell=True)
        days = payload.get("days", [])
        return {"slots": [{"day": d, "time": "09:00"} for d in days]}
'''


class ProjectFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Project

    team = factory.SubFactory(TeamFactory)
    requester = factory.SubFactory(UserFactory)
    name = factory.Sequence(lambda n: f"plugin-{n}")
    spec = factory.LazyAttribute(lambda p: {"name": p.name, "summary": "A plugin.",
                                            "commands": []})
    status = Project.Status.QUEUED


class RunFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Run

    project = factory.SubFactory(ProjectFactory)
    status = Run.Status.RUNNING
    phase = Run.Phase.IMPLEMENT
    max_iterations = 10
    started_at = factory.LazyFunction(timezone.now)


class IterationFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Iteration

    run = factory.SubFactory(RunFactory)
    number = factory.Sequence(lambda n: n + 1)
    files = factory.LazyFunction(lambda: {"weekly_scheduler/plugin.py": PLUGIN_V1})
    pass_rate = 0.5
    tests_ran = True
    tokens = 1200
    test_report = factory.LazyFunction(lambda: {
        "passed": 1, "failed": 1, "errors": 0, "pass_rate": 0.5,
        "outcomes": [
            {"nodeid": "tests/test_acceptance.py::test_example_1", "outcome": "passed",
             "message": ""},
            {"nodeid": "tests/test_acceptance.py::test_example_2", "outcome": "failed",
             "message": "AssertionError: assert {'slots': []} == {'slots': [{'day': 'mon'}]}"},
        ]})
    safety_verdict = "pass"
    timings = factory.LazyFunction(lambda: {"implement": 1800, "sandbox": 950})


def findings_report(path: str = "weekly_scheduler/plugin.py", line: int = 8) -> dict[str, Any]:
    return {"verdict": "review", "findings": [
        {"tool": "bandit", "rule": "B602", "severity": "high", "file": path, "line": line,
         "message": "subprocess call with shell=True identified, security issue."}]}


def run_with_history(*, project: Project | None = None, **run_fields: Any) -> Run:
    """A run with two iterations (the second one adds a flagged line) and a loop event."""
    run = RunFactory(project=project or ProjectFactory(status=Project.Status.GENERATING),
                     iteration=2, tokens_prompt=5200, tokens_completion=1800, **run_fields)
    IterationFactory(run=run, number=1, files={"weekly_scheduler/plugin.py": PLUGIN_V1},
                     pass_rate=0.5, error_signature="AssertionError: assert <dict> == <dict>")
    IterationFactory(run=run, number=2, files={"weekly_scheduler/plugin.py": PLUGIN_V2},
                     pass_rate=1.0, acceptance_passed=True, safety_verdict="review",
                     safety_report=findings_report())
    LoopEvent.objects.create(run=run, iteration=1, type="repeated_error",
                             signature="AssertionError", confidence=0.9, occurrences=3,
                             action="reset_context", reason="same error three times")
    return run


def approval_for(run: Run, *, kind: str = ApprovalRequest.Kind.CHANGE,
                 iteration: int | None = None, **payload: Any) -> ApprovalRequest:
    """A pending request as the engine writes it (the engine would also set the run waiting)."""
    number = run.iteration if iteration is None else iteration
    body = {"reasons": ["a review safety verdict"], "reasoning": "Added the schedule logic.",
            "plan": "1. parse days\n2. emit slots"}
    body.update(payload)
    return ApprovalRequest.objects.create(run=run, project=run.project, kind=kind,
                                          iteration=number, payload=body)
