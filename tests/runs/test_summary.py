"""The run page as a requester reads it: a plain summary first, written from the run's facts,
and the engineer's figures (codes, hashes, confidence, timings) only behind "Details"."""

from __future__ import annotations

import html as html_lib
import re
from typing import Any

import pytest
from django.urls import reverse

from runs.models import ApprovalRequest, LoopEvent, Project, Run
from runs.summary import OutcomeFact, describe_failure
from tests.projects.portal_factories import IterationFactory, ProjectFactory, RunFactory
from tests.teams.conftest import Portal

pytestmark = pytest.mark.django_db

DETAILS = '<details class="panel run-details" id="run-details">'
SPEC = {"name": "week-planner", "summary": "Plans a week.", "commands": [
    {"name": "plan-week", "description": "Plans the week.", "examples": []}]}
REFUSED = """payload = {'days': ['mon']}

    def test_plan_week_example_1():
>       assert Plugin().on_command("plan-week", payload) == expected
week_planner/plugin.py:31: in plan_week
    raise ValueError("a full day was refused")
E   ValueError: a full day was refused
"""


def failed_report(nodeid: str = "tests/test_acceptance.py::test_plan_week_example_1",
                  message: str = REFUSED) -> dict[str, Any]:
    return {"passed": 1, "failed": 1, "errors": 0, "pass_rate": 0.5, "outcomes": [
        {"nodeid": "tests/test_acceptance.py::test_plan_week_example_2", "outcome": "passed",
         "message": ""},
        {"nodeid": nodeid, "outcome": "failed", "message": message}]}


def make_run(portal: Portal, *, attempts: int = 1, **fields: Any) -> Run:
    """A run of `week-planner` whose attempts so far failed on the first example."""
    project = ProjectFactory(team=portal.team, requester=portal.requester, name="week-planner",
                             spec=SPEC, status=Project.Status.GENERATING)
    values = {"iteration": attempts, "max_iterations": 6, "phase": Run.Phase.IMPLEMENT, **fields}
    run = RunFactory(project=project, **values)
    for number in range(1, attempts + 1):
        IterationFactory(run=run, number=number, test_report=failed_report(),
                         code_hash=f"c0de{number}" + "a" * 59, reply_hash="feedbeef" * 8,
                         error_signature="ValueError: a full day was refused")
    return run


def page(portal: Portal, run: Run, query: str = "") -> str:
    response = portal.client(portal.requester).get(reverse("run_detail", args=[run.pk]) + query)
    assert response.status_code == 200
    return response.content.decode()


def text(markup: str) -> str:
    """What a reader sees: the text without tags, whitespace collapsed."""
    return " ".join(html_lib.unescape(re.sub(r"<[^>]+>", " ", markup)).split())


def before_and_inside_details(markup: str) -> tuple[str, str]:
    before, _, rest = markup.partition(DETAILS)
    assert rest, "the page has a Details element"
    inside = rest.split("</details>", 1)[0]
    assert "<summary>Details</summary>" in inside
    return text(before), text(inside)


def test_the_plain_summary_comes_first_and_the_figures_sit_behind_details(
        portal: Portal) -> None:
    run = make_run(portal, attempts=1)
    before, inside = before_and_inside_details(page(portal, run))
    assert ("Attempt 2 of 6: the tests showed that your example 1 stops with an error "
            "(“ValueError: a full day was refused”); fixing that.") in before
    # Hashes, the error signature and token counts are for engineers, inside Details only.
    for figure in ("c0de1aaa", "feedbeef", "7000", "prompt,"):
        assert figure not in before
    assert "c0de1aaa" in inside and "feedbeef" in inside and "ValueError" in inside
    assert "implement" in inside  # the step's code name


def test_a_loop_event_is_told_in_plain_words_its_kind_and_confidence_under_details(
        portal: Portal) -> None:
    run = make_run(portal, attempts=2, phase=Run.Phase.PLAN)
    LoopEvent.objects.create(run=run, iteration=2, type="identical_replies",
                             signature="reply feedbeeffeedbeef", confidence=0.8, occurrences=2,
                             action="reset_context", reason="the model gave the same reply "
                             "again (reply feedbeeffeedbeef): starting again from the spec")
    before, inside = before_and_inside_details(page(portal, run))
    summary = before.split("Status:", 1)[1].split("Timeline", 1)[0]
    assert ("The model repeated its last answer, so it was started again with a fresh "
            "conversation.") in summary
    assert "Attempt 3 of 6:" in summary and "starting again with a fresh conversation." in summary
    for raw in ("identical_replies", "reset_context", "80% sure", "feedbeef"):
        assert raw not in before
        assert raw in inside


def test_an_escalated_run_shows_where_it_stopped_and_lights_no_step(portal: Portal) -> None:
    run = make_run(portal, attempts=3, status=Run.Status.ESCALATED, phase=Run.Phase.PLAN)
    LoopEvent.objects.create(run=run, iteration=3, type="test_failure_loop", confidence=0.75,
                             occurrences=5, action="escalate", reason="stuck")
    ApprovalRequest.objects.create(run=run, project=run.project, iteration=3,
                                   kind=ApprovalRequest.Kind.ESCALATION, payload={})
    markup = page(portal, run)
    steps = re.search(r'<ol class="phases"[^>]*>(.*?)</ol>', markup, re.S)
    assert steps is not None
    assert 'aria-current="step"' not in steps.group(1)
    pills = {label: state for state, label in
             re.findall(r'<li class="(\w+)"[^>]*>([^<]+)<', steps.group(1))}
    assert pills["Plan"] == "done" and "current" not in pills.values()
    assert pills["Reflect"] == "stopped" and pills["Learn"] == "todo"
    assert "Reflect · stopped here" in text(steps.group(1))
    before, _ = before_and_inside_details(markup)
    assert ("Attempt 3 of 6: the tests showed that your example 1 stops with an error "
            "(“ValueError: a full day was refused”); it is stuck and waits for a person's "
            "guidance.") in before
    assert "The same tests kept failing, so it asked a person for guidance." in before


def test_a_change_waiting_for_approval_stops_the_steps_after_verify(portal: Portal) -> None:
    run = make_run(portal, attempts=2, status=Run.Status.AWAITING_APPROVAL,
                   phase=Run.Phase.REFLECT)
    passing = [{"nodeid": f"tests/test_acceptance.py::test_plan_week_example_{n}",
                "outcome": "passed", "message": ""} for n in (1, 2)]
    run.iterations.filter(number=2).update(acceptance_passed=True, pass_rate=1.0, test_report={
        "passed": 2, "failed": 0, "pass_rate": 1.0, "outcomes": passing})
    ApprovalRequest.objects.create(run=run, project=run.project, iteration=2,
                                   kind=ApprovalRequest.Kind.CHANGE, payload={})
    markup = page(portal, run)
    assert ("Attempt 2 of 6: your examples work and every test passes; the change waits for a "
            "person's approval.") in text(markup)
    assert 'aria-current="step"' not in markup
    assert "Verify · stopped here" in text(markup)


def test_a_failed_run_says_why_it_stopped_and_has_no_step_lit(portal: Portal) -> None:
    run = make_run(portal, attempts=6, status=Run.Status.FAILED, phase=Run.Phase.DONE,
                   error="attempt budget exhausted: 6 of 6 attempts used")
    markup = page(portal, run)
    assert '<ol class="phases"' not in markup and 'aria-current="step"' not in markup
    before, inside = before_and_inside_details(markup)
    assert ("Stopped after attempt 6 of 6: the tests showed that your example 1 stops with an "
            "error (“ValueError: a full day was refused”); all 6 attempts were used.") in before
    assert "budget exhausted" not in before and "budget exhausted" in inside


def test_a_cancelled_run_says_a_person_stopped_it(portal: Portal) -> None:
    run = make_run(portal, attempts=1, status=Run.Status.CANCELLED, phase=Run.Phase.DONE)
    assert "Stopped after attempt 1 of 6:" in text(page(portal, run))
    assert "; a person stopped it." in text(page(portal, run))


def test_a_running_run_without_attempts_says_what_it_does(portal: Portal) -> None:
    run = make_run(portal, attempts=0, phase=Run.Phase.IMPLEMENT)
    markup = page(portal, run)
    assert "Attempt 1 of 6: writing the code." in text(markup)
    assert re.search(r'<li class="current" aria-current="step">Implement', markup)


def test_a_succeeded_run_says_so_and_what_waits(portal: Portal) -> None:
    run = make_run(portal, attempts=2, status=Run.Status.SUCCEEDED, phase=Run.Phase.DONE)
    run.iterations.filter(number=2).update(succeeded=True, acceptance_passed=True, pass_rate=1.0)
    ApprovalRequest.objects.create(run=run, project=run.project, iteration=2,
                                   kind=ApprovalRequest.Kind.PUBLISH, payload={})
    assert ("Done in attempt 2 of 6: every example gives the expected answer and 100% of the "
            "tests pass; publishing waits for a reviewer's approval.") in text(page(portal, run))
    ApprovalRequest.objects.filter(run=run).update(status=ApprovalRequest.Status.APPROVED)
    Project.objects.filter(pk=run.project_id).update(status=Project.Status.PUBLISHED)
    assert ("Done in attempt 2 of 6: every example gives the expected answer and 100% of the "
            "tests pass; it is published in the marketplace.") in text(page(portal, run))


def test_blocked_code_is_explained_without_the_tools_codes(portal: Portal) -> None:
    run = make_run(portal, attempts=1, phase=Run.Phase.PLAN)
    run.iterations.update(tests_ran=False, test_report={}, safety_verdict="block", safety_report={
        "verdict": "block", "findings": [
            {"tool": "bandit", "rule": "B602", "severity": "HIGH", "file": "week_planner/plugin.py",
             "line": 8, "message": "subprocess_popen_with_shell_equals_true (B602): subprocess "
                                   "call with shell=True identified, security issue."}]})
    markup = page(portal, run)
    before, inside = before_and_inside_details(markup)
    assert ("Attempt 2 of 6: the safety gate stopped the code: subprocess call with shell=True "
            "identified, security issue (week_planner/plugin.py, line 8); fixing that.") in before
    assert "B602" not in before
    attempt = text(markup.split('id="iteration-heading"', 1)[1].split("Details of attempt", 1)[0])
    assert "Stops the code: Subprocess call with shell=True identified" in attempt
    assert "B602" not in attempt
    assert "B602" in text(markup.split("Details of attempt", 1)[1])


def test_an_assert_in_a_test_file_is_not_shown_as_a_finding(portal: Portal) -> None:
    """A report stored before the gate stopped reporting it: the page reads it with the gate's
    rule; a dangerous call in the plugin's code is still shown."""
    run = make_run(portal, attempts=1)
    run.iterations.update(safety_verdict="pass", safety_report={"verdict": "pass", "findings": [
        {"tool": "bandit", "rule": "B101", "severity": "LOW", "file": "tests/test_x.py",
         "line": 4, "message": "assert_used (B101): Use of assert detected."},
        {"tool": "bandit", "rule": "B324", "severity": "HIGH", "file": "week_planner/plugin.py",
         "line": 5, "message": "hashlib (B324): Use of weak MD5 hash for security."}]})
    markup = page(portal, run)
    assert "Use of assert detected" not in markup and "tests/test_x.py line 4" not in markup
    assert "Use of weak MD5 hash for security — week_planner/plugin.py line 5" in text(markup)
    code = page(portal, run, "?iteration=1&view=code&file=tests/test_x.py")
    assert 'class="finding"' not in code


def test_the_live_parts_carry_the_summary_and_the_details(portal: Portal) -> None:
    run = make_run(portal, attempts=1)
    client = portal.client(portal.requester)
    url = reverse("run_detail", args=[run.pk])
    live = client.get(url + "?part=live", HTTP_HX_REQUEST="true").content.decode()
    assert live.lstrip().startswith('<div id="run-live"')
    assert "Attempt 2 of 6: the tests showed that your example 1" in text(live)
    assert "c0de1aaa" not in live
    details = client.get(url + "?part=details", HTTP_HX_REQUEST="true").content.decode()
    assert details.lstrip().startswith('<div id="run-details-body"') and "<html" not in details
    assert "c0de1aaa" in details and 'hx-trigger="live-update from:body"' in details


@pytest.mark.parametrize(("nodeid", "message", "said"), [
    ("tests/test_acceptance.py::test_plan_week_example_2",
     "E   assert {'slots': []} == {'slots': ['mon']}",
     "your example 2 gives a different answer than expected"),
    ("tests/test_generated_rules.py::test_full_day_is_refused",
     "E   AssertionError: a full day must be refused",
     "the check “full day is refused” fails: “a full day must be refused”"),
    ("tests/test_generated_rules.py::test_full_day_is_refused", "E   assert False",
     "the check “full day is refused” fails"),
    ("tests/test_acceptance.py",
     "collection failed: ImportError while importing a test module\n"
     "E   ImportError: no module named x",
     "the tests could not be loaded (“ImportError: no module named x”)"),
])
def test_a_failing_test_is_described_in_words(nodeid: str, message: str, said: str) -> None:
    assert describe_failure(OutcomeFact(nodeid, "failed", message), ("plan-week",)) == said


def test_examples_of_several_commands_name_the_command() -> None:
    fact = OutcomeFact("tests/test_acceptance.py::test_plan_week_example_3", "failed",
                    "E   KeyError: 'days'")
    assert describe_failure(fact, ("plan-week", "list-days")) == (
        "your example 3 of “plan-week” stops with an error (“KeyError: 'days'”)")
