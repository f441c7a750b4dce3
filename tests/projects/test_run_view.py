"""The run view: access, timeline, iterations, any-against-any diffs, findings on their lines,
and the control buttons with their permissions."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.urls import reverse

from projects.diffs import code_lines, split_rows, unified_rows
from runs.models import Project, Run
from teams.models import AuditEntry
from tests.projects.portal_factories import (
    PLUGIN_V1,
    PLUGIN_V2,
    ProjectFactory,
    approval_for,
    run_with_history,
)
from tests.teams.conftest import Portal

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(portal: Portal) -> Run:
    project = ProjectFactory(team=portal.team, requester=portal.requester,
                             name="weekly-scheduler", status=Project.Status.GENERATING)
    return run_with_history(project=project)


def page(portal: Portal, user: Any, run: Run, query: str = "") -> str:
    response = portal.client(user).get(reverse("run_detail", args=[run.pk]) + query)
    assert response.status_code == 200
    return response.content.decode()


def test_members_see_the_run_outsiders_get_404(portal: Portal, run: Run) -> None:
    for user in (portal.admin, portal.reviewer, portal.requester, portal.colleague):
        assert "weekly-scheduler" in page(portal, user, run)
    url = reverse("run_detail", args=[run.pk])
    assert portal.client(portal.outsider).get(url).status_code == 404
    assert portal.client(portal.outsider).get(reverse("run_detail", args=[9999])).status_code \
        == 404


def test_timeline_shows_attempts_loop_events_and_usage(portal: Portal, run: Run) -> None:
    approval_for(run)
    html = " ".join(page(portal, portal.reviewer, run).split())
    assert ("Attempt 1</a>: 50% of the tests pass; not every example works yet.") in html
    assert ("Attempt 2</a>: 100% of the tests pass; your examples work; the safety gate asks a "
            "person to look at the code.") in html
    timeline = html.split('id="timeline-heading"', 1)[1].split("</section>", 1)[0]
    assert ("The same error came back again and again, so it was started again with a fresh "
            "conversation.") in timeline
    assert "repeated_error" not in timeline
    details = html.split('id="run-details"', 1)[1].split("</details>", 1)[0]
    assert "<code>repeated_error</code> (90% sure, seen 3×) → <code>reset_context</code>" \
        in details
    assert "7000" in details and "5200 prompt, 1800 completion" in details  # tokens
    assert "Waiting for a person" in html and "Change request" in html
    assert 'ws-connect="/ws/runs/' in html and 'aria-live="polite"' in html


def test_latest_attempt_details_tests_and_findings(portal: Portal, run: Run) -> None:
    html = page(portal, portal.reviewer, run)
    assert "<h2 id=\"iteration-heading\">Attempt 2</h2>" in html
    assert "test_example_2" in html and "Why it failed" in html
    assert "Subprocess call with shell=True identified" in html
    assert "weekly_scheduler/plugin.py line 8" in html
    details = html.split("Details of attempt 2", 1)[1]
    assert "B602" in details
    assert "implement</dt><dd>1800 ms" in details  # timings per phase


def test_diff_of_any_iteration_against_any(portal: Portal, run: Run) -> None:
    unified = page(portal, portal.reviewer, run, "?iteration=2&against=1&view=unified")
    assert "+</span>" not in unified  # markers are plain text after the hidden label
    assert re.search(r'<tr class="add">.*subprocess\.run\(payload', unified)
    reverse_diff = page(portal, portal.reviewer, run, "?iteration=1&against=2&view=unified")
    assert re.search(r'<tr class="del">.*subprocess\.run\(payload', reverse_diff)
    whole = page(portal, portal.reviewer, run, "?iteration=1&against=0")
    assert "new file mode" not in whole and "1 line" not in whole
    split = page(portal, portal.reviewer, run, "?iteration=2&against=1&view=split")
    assert "Side-by-side diff" in split and "Attempt 1</th>" in split


def test_code_view_highlights_the_flagged_line(portal: Portal, run: Run) -> None:
    html = page(portal, portal.reviewer, run, "?iteration=2&view=code")
    flagged = re.search(r'<tr id="L(\d+)" class="finding">', html)
    assert flagged and flagged.group(1) == "8"
    assert "safety finding: high B602" in html


def test_run_without_attempts_explains_what_will_appear(portal: Portal) -> None:
    fresh = Run.objects.create(project=ProjectFactory(team=portal.team))
    assert "No attempt checked yet" in page(portal, portal.reviewer, fresh)


def test_htmx_live_part_is_only_the_live_fragment(portal: Portal, run: Run) -> None:
    response = portal.client(portal.reviewer).get(
        reverse("run_detail", args=[run.pk]) + "?part=live", HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="run-live"') and "<html" not in html


# -- controls ----------------------------------------------------------------------------------


def control(portal: Portal, user: Any, run: Run, action: str) -> Any:
    return portal.client(user).post(reverse("run_control", args=[run.pk, action]), follow=True)


def test_controls_requester_and_reviewers_yes_colleague_403_outsider_404(
        portal: Portal, run: Run) -> None:
    assert control(portal, portal.colleague, run, "pause").status_code == 403
    assert control(portal, portal.outsider, run, "pause").status_code == 404
    assert "Pause" not in page(portal, portal.colleague, run).split("Run controls")[-1][:50]
    run.refresh_from_db()
    assert not run.pause_requested
    response = control(portal, portal.requester, run, "pause")
    assert "Pause requested" in response.content.decode()
    run.refresh_from_db()
    assert run.pause_requested
    assert control(portal, portal.reviewer, run, "resume").status_code == 200
    run.refresh_from_db()
    assert not run.pause_requested


def test_emergency_stop_cancels_and_is_audited(portal: Portal, run: Run) -> None:
    Run.objects.filter(pk=run.pk).update(status=Run.Status.PAUSED)
    response = control(portal, portal.admin, run, "cancel")
    assert "Run cancelled" in response.content.decode()
    run.refresh_from_db()
    assert run.status == Run.Status.CANCELLED and run.cancel_requested
    entry = AuditEntry.objects.get(action="run.cancel")
    assert entry.before == {"status": "paused"} and entry.after["status"] == "cancelled"


def test_retry_starts_a_new_run_of_a_finished_one(portal: Portal, run: Run) -> None:
    running = control(portal, portal.reviewer, run, "retry")
    assert "Only a finished run can be retried" in running.content.decode()
    Run.objects.filter(pk=run.pk).update(status=Run.Status.FAILED)
    Project.objects.filter(pk=run.project_id).update(
        spec={"name": "weekly-scheduler", "summary": "Plans a week.", "commands": [
            {"name": "plan", "description": "d", "examples": [
                {"input": {"a": 1}, "output": {"b": 2}}, {"input": {"a": 2}, "output": {"b": 3}}
            ]}]})
    Run.objects.filter(pk=run.pk).update(script={"implementer": ["nothing"]})
    response = control(portal, portal.requester, run, "retry")
    assert "A new run of this project has been queued." in response.content.decode()
    newest = Run.objects.filter(project=run.project).order_by("-id").first()
    assert newest.pk != run.pk and newest.status == Run.Status.QUEUED
    assert newest.script == {"implementer": ["nothing"]}
    assert response.redirect_chain[-1][0] == reverse("run_detail", args=[newest.pk])


def test_a_succeeded_run_offers_publishing_to_the_marketplace(portal: Portal, run: Run) -> None:
    publish_url = reverse("marketplace:publish_run", args=[run.pk])
    assert publish_url not in page(portal, portal.requester, run)
    Run.objects.filter(pk=run.pk).update(status=Run.Status.SUCCEEDED)
    assert publish_url in page(portal, portal.requester, run)


def test_unknown_action_is_refused(portal: Portal, run: Run) -> None:
    response = control(portal, portal.reviewer, run, "explode")
    assert "Unknown action" in response.content.decode()


# -- the diff helpers --------------------------------------------------------------------------


def test_unified_rows_number_both_sides() -> None:
    view = unified_rows({"p.py": PLUGIN_V1}, {"p.py": PLUGIN_V2})
    added = [r for r in view.rows if r.kind == "add"]
    assert view.added == len(added) and view.removed >= 0
    shell = next(r for r in added if "shell=True" in r.text)
    assert shell.new_no == PLUGIN_V2.splitlines().index(shell.text) + 1
    assert view.rows[0].kind == "file" and view.rows[0].text == "p.py"


def test_split_rows_pair_old_and_new_lines() -> None:
    rows = split_rows({"a.py": "x = 1\ny = 2\n"}, {"a.py": "x = 1\ny = 3\nz = 4\n"})
    kinds = [r.kind for r in rows]
    assert kinds[:2] == ["file", "hunk"]
    replaced = next(r for r in rows if r.kind == "replace")
    assert (replaced.left, replaced.right, replaced.left_no, replaced.right_no) == (
        "y = 2", "y = 3", 2, 2)
    inserted = next(r for r in rows if r.kind == "insert")
    assert (inserted.left_no, inserted.right, inserted.right_no) == (None, "z = 4", 3)
    assert split_rows({"a": "same"}, {"a": "same"}) == []


def test_code_lines_carry_findings() -> None:
    lines = code_lines("a\nb\nc", {2: ["high B602: shell"]})
    assert [line.findings for line in lines] == [(), ("high B602: shell",), ()]


def test_the_requester_waiting_on_the_publish_request_reads_who_acts_next(
        portal: Portal, run: Run) -> None:
    """Issue 48: no "Publish" form that would change the request she waits on."""
    Run.objects.filter(pk=run.pk).update(status=Run.Status.SUCCEEDED)
    gate = approval_for(run, kind="publish")
    publish_url = reverse("marketplace:publish_run", args=[run.pk])
    html = page(portal, portal.requester, run)
    assert publish_url not in html
    mine = " ".join(re.sub(r"<[^>]+>", " ", html).split())
    assert "Where it stands: built and tested; waiting for a reviewer to publish it." in mine
    assert f"{portal.reviewer.get_username()}" in mine.split("Where it stands:")[1][:300]
    assert "You will get a notification when it is decided." in mine
    theirs = page(portal, portal.reviewer, run)
    assert publish_url not in theirs
    assert reverse("approval_detail", args=[gate.pk]) in theirs
    assert "Decide the publish request" in theirs


def test_the_empty_attempt_follows_live_updates_until_an_attempt_is_checked(
        portal: Portal) -> None:
    """Issue 48: the live page kept "No attempt checked yet" after success until a reload."""
    fresh = Run.objects.create(project=ProjectFactory(team=portal.team))
    url = reverse("run_detail", args=[fresh.pk]) + "?part=attempt"
    client = portal.client(portal.reviewer)
    empty = client.get(url, HTTP_HX_REQUEST="true").content.decode()
    assert "No attempt checked yet" in empty and 'hx-trigger="live-update from:body"' in empty
    assert "<html" not in empty
    run_with_history(project=fresh.project)
    later = Run.objects.filter(project=fresh.project).exclude(pk=fresh.pk).get()
    checked = client.get(reverse("run_detail", args=[later.pk]) + "?part=attempt",
                         HTTP_HX_REQUEST="true").content.decode()
    assert '<h2 id="iteration-heading">Attempt 2</h2>' in checked
    assert "No attempt checked yet" not in checked and 'id="code-heading"' in checked
