"""Reviewers decide on what changed (issue 48), in Chromium at 1280 and 390 px, axe finding
nothing serious and nothing scrolling sideways:

- a change run's publish gate shows first what changes from the version in use (the version it
  becomes, the case that asked for it, the test added) and its diff against that version, not
  the whole plugin; the run page's "Compare with" offers the version in use and starts there;
- a plan gate shows what was asked beside the plan (the requester's words, the examples, the
  answers), says the plan was cut short when the model stopped at its length limit, and its
  "Reject" says that the run plans again;
- on a phone the decision form comes after what it decides, and a unified diff's lines wrap.

The runs are stored as the engine leaves them (the change run's publish payload is made by the
engine's own `publish_change`); deciding is tested elsewhere (tests/runs/test_change_runs.py).
"""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse
from playwright.sync_api import Page, expect

from autocoder.engine.changing import publish_change, start_files
from autocoder.engine.spec import spec_from_dict
from autocoder.plugins import read_manifest
from marketplace.proposals import publish_payload_default
from projects.models import Interview
from runs.models import ApprovalRequest, Iteration, LLMCall, Project, Run
from runs.services.changes import change_spec
from tests.browser.checks import accessible_and_fits
from tests.browser.journey import WIDTHS
from tests.browser.pages import log_in
from tests.live import LiveServer
from tests.runs.test_change_runs import FIXED, MCCARTHY, version_1_0_0

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

WORDS = "I greet our members by name on the club's website and want it done for me."


def change_publish_gate(people: dict[str, Any]) -> ApprovalRequest:
    """greeter 1.0.0 in use; a change run (Mc names keep their capitals) that succeeded at its
    first attempt and waits at its publish gate."""
    team, requester = people["team"], people["requester"]
    base = version_1_0_0()
    manifest = read_manifest(base["plugin.toml"])
    assert manifest is not None
    spec = change_spec(manifest, change="Names like McCarthy lose their capitals.",
                       keep="The greeting stays 'Hello, <name>!'.", cases=[MCCARTHY],
                       autonomy="semi", version="1.0.0")
    project = Project.objects.create(team=team, requester=requester, spec=spec,
                                     name="greeter: keep Mc capitals",
                                     status=Project.Status.AWAITING_APPROVAL)
    run = Run.objects.create(project=project, status=Run.Status.SUCCEEDED, iteration=1,
                             phase=Run.Phase.DONE, base_files=base, base_version="1.0.0",
                             base_note="The new test fails on version 1.0.0, as expected.")
    files = start_files(spec_from_dict(spec), base)
    files["greeter/plugin.py"] = FIXED
    files["plugin.toml"] = files["plugin.toml"].replace('version = "1.0.0"',
                                                        'version = "1.0.1"')
    report = {"passed": 6, "failed": 0, "errors": 0, "pass_rate": 1.0, "outcomes": [
        {"nodeid": "tests/test_regression_1.py::test_greet_example_1", "outcome": "passed"}]}
    run.best_iteration = Iteration.objects.create(
        run=run, number=1, files=files, pass_rate=1.0, acceptance_passed=True, tests_ran=True,
        succeeded=True, safety_verdict="pass", test_report=report,
        safety_report={"verdict": "pass", "findings": []})
    run.save()
    return ApprovalRequest.objects.create(
        run=run, project=project, kind=ApprovalRequest.Kind.PUBLISH, iteration=1,
        payload={"reasoning": "The run succeeded.", "files": sorted(files),
                 **publish_payload_default(team=team, files=files),
                 **publish_change(run, spec, files)})


def plan_gate(people: dict[str, Any]) -> ApprovalRequest:
    """A new greeter asked for in the wizard (two examples, one answer), waiting at its plan,
    which the model's length limit cut short."""
    team, requester = people["team"], people["requester"]
    spec = {"name": "member-greeter", "summary": "Greets a club member by name.",
            "commands": [{"name": "greet", "description": "Say hello to a member.",
                          "examples": [{"input": {"name": "Ada"},
                                        "output": {"message": "Hello, Ada!"}},
                                       {"input": {"name": "Linus"},
                                        "output": {"message": "Hello, Linus!"}}]}],
            "constraints": ["Standard library only",
                            "Q: Should the greeting be formal or casual? A: Casual, always.",
                            "Assumption: One person per request."]}
    project = Project.objects.create(team=team, requester=requester, spec=spec,
                                     name="member-greeter",
                                     status=Project.Status.AWAITING_APPROVAL)
    Interview.objects.create(team=team, requester=requester, project=project, request=WORDS,
                             step=Interview.Step.STARTED)
    run = Run.objects.create(project=project, status=Run.Status.AWAITING_APPROVAL,
                             iteration=1, phase=Run.Phase.PLAN)
    LLMCall.objects.create(run=run, iteration=1, role="architect", provider="scripted",
                           finish_reason="length", reply="1. Read the name. 2. Gree")
    return ApprovalRequest.objects.create(
        run=run, project=project, kind=ApprovalRequest.Kind.PLAN, iteration=1,
        payload={"plan": "1. Read the name.\n2. Gree", "reasons": ["the team checks plans"]})


def above(page: Page, first: str, then: str) -> bool:
    """Whether the element `first` starts above the element `then` on the page."""
    return bool(page.evaluate(
        "([a, b]) => document.querySelector(a).getBoundingClientRect().top"
        " < document.querySelector(b).getBoundingClientRect().top", [first, then]))


def test_a_change_is_reviewed_against_the_version_in_use(
        server: LiveServer, people: dict[str, Any], context_factory: Any) -> None:
    gate = change_publish_gate(people)
    for width, height in WIDTHS:
        page = context_factory(viewport={"width": width, "height": height},
                               bypass_csp=True).new_page()
        log_in(page, server, "rob")
        page.goto(f"{server.url}{reverse('approval_detail', args=[gate.pk]).lstrip('/')}")
        facts = page.get_by_role("region", name="What changes from version 1.0.0")
        expect(facts).to_contain_text("Published, it becomes version 1.0.1")
        expect(facts).to_contain_text("McCarthy")  # the case that asked for it
        expect(facts).to_contain_text("tests/test_regression_1.py: test_greet_example_1")
        expect(facts).to_contain_text("The new test fails on version 1.0.0, as expected.")
        diff = page.get_by_role("region", name="Code changes compared with version 1.0.0, "
                                                "the one in use")
        # The change only: the fix, the new test, the version number; not 1.0.0's other files.
        expect(diff).to_contain_text("Hello, {name}!")
        expect(diff).to_contain_text("tests/test_regression_1.py")
        expect(diff).not_to_contain_text("tests/test_generated_edge_cases.py")
        # What it decides comes before the decision (on a phone, above it).
        assert above(page, "#change-heading", "#diff-heading")
        if width < 900:
            assert above(page, "#diff-heading", "#decision-heading")
            assert above(page, "#tests-heading", "#decision-heading")
            # The unified diff's lines wrap instead of scrolling sideways.
            assert page.evaluate("() => { const d = document.querySelector('.diff');"
                                 " return d.scrollWidth <= d.clientWidth; }")
        expect(page.get_by_text("Approving publishes the plugin; rejecting leaves it "
                                "unpublished.")).to_be_visible()
        # What it does is the version's words until the reviewer changes them.
        expect(page.get_by_label("What it does")).to_have_value(
            "Greets a person by name, politely, with a comma after Hello.")
        expect(page.get_by_text("Version 1.0.0's words: if the change changes what it does, "
                                "say so here.")).to_be_visible()
        accessible_and_fits(page, "a change's publish gate", width)

        page.get_by_role("link", name="Side by side, or compared with something else").click()
        expect(page.get_by_label("Compare with")).to_have_value("version")
        compare = page.get_by_label("Compare with").locator("option")
        expect(compare).to_have_text(["version 1.0.0, the one in use", "nothing (all new)"])
        expect(page.locator(".diff thead")).to_contain_text("Version 1.0.0, the one in use")
        accessible_and_fits(page, "a change run's side-by-side diff", width)
        page.get_by_label("Show", exact=True).select_option("unified")
        page.get_by_role("button", name="Show", exact=True).click()
        expect(page.locator("main")).to_contain_text(
            "compared with version 1.0.0, the one in use")


def test_a_plan_is_checked_against_what_was_asked(
        server: LiveServer, people: dict[str, Any], context_factory: Any) -> None:
    gate = plan_gate(people)
    for width, height in WIDTHS:
        page = context_factory(viewport={"width": width, "height": height},
                               bypass_csp=True).new_page()
        log_in(page, server, "rob")
        page.goto(f"{server.url}{reverse('approval_detail', args=[gate.pk]).lstrip('/')}")
        asked = page.get_by_role("region", name="What was asked")
        expect(asked).to_contain_text(WORDS)
        expect(asked).to_contain_text("Greets a club member by name.")
        expect(asked.get_by_role("table")).to_contain_text("Hello, Linus!")
        expect(asked).to_contain_text("Should the greeting be formal or casual?")
        expect(asked).to_contain_text("Casual, always.")
        expect(asked).to_contain_text("One person per request.")
        expect(page.get_by_role("note")).to_contain_text("this plan is cut short")
        reject = page.get_by_label("Reject the plan (the run plans again; your comment is "
                                   "its guidance)")
        expect(reject).to_be_visible()
        expect(page.get_by_text("Rejecting or asking for changes sends it back to planning"
                                )).to_be_visible()
        if width < 900:
            assert above(page, "#asked-heading", "#decision-heading")
        else:  # beside the plan
            assert page.evaluate(
                "() => Math.abs(document.querySelector('#asked-heading').getBoundingClientRect()"
                ".top - document.querySelector('#reasoning-heading').getBoundingClientRect()"
                ".top) < 5")
        accessible_and_fits(page, "a plan gate", width)

        # The run page has the request too, folded under "What was asked".
        page.goto(f"{server.url}{reverse('run_detail', args=[gate.run_id]).lstrip('/')}")
        page.locator("#asked summary").click()
        expect(page.locator("#asked")).to_contain_text("Casual, always.")
        accessible_and_fits(page, "a run page with what was asked", width)
