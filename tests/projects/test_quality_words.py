"""The run page says the quality score's parts in points and counts tests as tests (issue 44;
docs/engine.md, "The quality score"), also for a report stored before the words changed."""

from __future__ import annotations

import html
import re
from typing import cast

import pytest
from django.urls import reverse

from runs.models import Iteration, Project
from tests.projects.portal_factories import ProjectFactory, run_with_history
from tests.teams.conftest import Portal

pytestmark = pytest.mark.django_db

# An attempt's report as the pages stored it before (parts labelled "Tests passing"), with 18
# tests of which 17 pass.
STORED = {
    "score": 88, "strategy": "basic", "threshold": 85, "host_fixes": [],
    "parts": [{"stage": "tests", "label": "Tests passing", "points": 33, "weight": 35},
              {"stage": "coverage", "label": "Coverage", "points": 10, "weight": 15},
              {"stage": "lint", "label": "Style", "points": 10, "weight": 10},
              {"stage": "types", "label": "Types", "points": 10, "weight": 10},
              {"stage": "performance", "label": "Speed", "points": 15, "weight": 15},
              {"stage": "docs", "label": "README", "points": 10, "weight": 15}],
    "tests": {"passed": 17, "failed": 1, "errors": 0, "pass_rate": 0.9444},
    "stages": [
        {"stage": "tests", "label": "Tests", "passed": False, "findings": [], "seconds": 1.0,
         "detail": {"passed": 17, "failed": 1, "errors": 0}},
        {"stage": "coverage", "label": "Coverage", "passed": False, "seconds": 0.0,
         "findings": [{"message": "no test runs the command `b`: add tests for it",
                       "where": "b"}],
         "detail": {"line_rate": 0.9, "commands": 2, "uncovered_commands": ["b"]}}],
}


def test_the_run_page_says_points_and_counts_the_tests(portal: Portal) -> None:
    project = cast(Project, ProjectFactory(team=portal.team, requester=portal.requester,
                                           name="weekly-scheduler",
                                           status=Project.Status.GENERATING))
    run = run_with_history(project=project)
    Iteration.objects.filter(run=run, number=2).update(quality=STORED, quality_score=88)

    response = portal.client(portal.reviewer).get(
        reverse("run_detail", args=[run.pk]) + "?iteration=2")
    words = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", response.content.decode())).split())
    assert "Tests 33 of 35 points (17 of 18 tests passing)" in words, words
    assert "Coverage 10 of 15 points (the tests run 90% of the lines and 1 of 2 commands)" \
        in words
    assert "The plugin's own tests : 17 of 18 tests passing" in words
    assert "Tests passing 33" not in words and "33 of 35 tests" not in words
