"""The quality pipeline's verdict in Chromium (docs/engine.md, "The quality pipeline"): the
reviewer's page of a change request and the run page show the score, its parts and every stage
with what it found, at 1280 px and 390 px, axe-clean.

The report is a real one: the pipeline ran in the sandbox on a held-out plugin with an untested
command (tests/quality/plugins/untested_command), and the iteration keeps it as the loop does
(quality_gate.checkpoint_quality). Nothing is mocked: daphne on the test database.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from autocoder.engine.quality_gate import checkpoint_quality
from autocoder.engine.spec import spec_from_json
from autocoder.quality.pages import STAGE_LABELS
from autocoder.quality.pipeline import run_quality
from config.management.commands.quality_scan import read_plugin_dir
from runs.models import ApprovalRequest, Iteration, Project, Run
from tests.browser.checks import accessible_and_fits as check
from tests.browser.journey import WIDTHS
from tests.browser.pages import log_in
from tests.live import LiveServer
from tests.projects.portal_factories import approval_for, run_with_history

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "tests" / "quality" / "plugins" / "untested_command"


def _gate_with_quality(people: dict[str, Any]) -> tuple[ApprovalRequest, dict[str, Any]]:
    spec = spec_from_json((ROOT / "docs" / "examples" / "weekly-scheduler.spec.json").read_text())
    report = run_quality(read_plugin_dir(PLUGIN), strategy="basic")
    quality = checkpoint_quality(report, spec, [])
    project = Project.objects.create(team=people["team"], requester=people["requester"],
                                     name="weekly-scheduler",
                                     status=Project.Status.AWAITING_APPROVAL, spec={})
    run = run_with_history(project=project, status=Run.Status.AWAITING_APPROVAL,
                           phase=Run.Phase.LEARN, autonomy="semi")
    Iteration.objects.filter(run=run, number=2).update(quality=quality,
                                                       quality_score=quality["score"])
    return approval_for(run, reasons=["a review safety verdict"]), quality


def gate_with_quality(people: dict[str, Any]) -> tuple[ApprovalRequest, dict[str, Any]]:
    # In a thread of its own: services announce changes through async_to_sync, which refuses
    # to run where Playwright's loop runs (see conftest.py).
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(_gate_with_quality, people).result()


def test_the_reviewer_sees_every_stage_of_the_quality_pipeline(
        server: LiveServer, people: dict[str, Any], context_factory: Any) -> None:
    change, quality = gate_with_quality(people)
    coverage = next(s for s in quality["stages"] if s["stage"] == "coverage")
    assert not coverage["passed"], json.dumps(coverage)  # the plugin's defect, named
    uncovered = coverage["findings"][0]["message"]
    for width, height in WIDTHS:
        page = context_factory(viewport={"width": width, "height": height},
                               bypass_csp=True).new_page()  # axe is injected as a script
        log_in(page, server, "rob")
        for name, url in (("change request", f"approvals/{change.pk}/"),
                          ("run page", f"runs/{change.run_id}/?iteration=2")):
            page.goto(f"{server.url}{url}")
            section = page.get_by_role("region", name=f"Quality: {quality['score']} of 100")
            expect(section).to_be_visible()
            for label in STAGE_LABELS.values():
                expect(section.get_by_text(label, exact=True)).to_be_visible()
            expect(section.get_by_text("needs work")).to_have_count(1)  # coverage alone
            expect(section.get_by_text(uncovered)).to_be_visible()  # its findings are open
            check(page, name, width)
