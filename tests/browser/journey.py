"""Every page of the journey, in one list, for the tests that visit them all (no page scrolls
sideways: test_layout.py; no serious accessibility problem: test_accessibility.py).

`journey_data` builds what the pages show: the demo board (tests/projects/demo_data.py) with an
approval of every kind (change, plan, escalation, publish), a published plugin, an uploaded
version waiting for a reviewer and a notification about it. `JOURNEY` names each page, the URL
and who looks at it; `walk_wizard` goes through the interview's steps in the browser, calling
back on each one.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.db import connections
from django.urls import reverse
from django.utils import timezone
from playwright.sync_api import Page, expect

from marketplace.models import PluginVersion
from marketplace.proposals import publish_payload_default
from marketplace.services.publishing import publish_request_approve
from marketplace.services.uploads import plugin_upload_submit
from runs.approval_rules import approval_candidate
from runs.budgets import BudgetState, spend_record
from runs.models import ApprovalRequest, Iteration, Project, Run
from teams.models import Team
from teams.services.invitations import invitation_send
from tests.browser.pages import answer_actions, continue_, describe, fill_example
from tests.factories import MembershipFactory, TeamFactory, UserFactory
from tests.marketplace.conftest import plugin_tree, zip_bytes
from tests.projects import demo_data
from tests.projects.portal_factories import approval_for, run_with_history
from tests.tools.conftest import publish_version
from tools.models import Invocation, Schedule
from tools.services.activations import activation_decide, activation_request
from tools.services.invocations import invocation_perform
from tools.services.schedule_runs import schedules_due_send
from tools.services.schedules import schedule_create

WIDTHS = ((1280, 800), (390, 844))


@dataclass(frozen=True)
class JourneyPage:
    name: str
    path: str
    user: str  # who looks at it (members of team acme but ivy, invited, and sam, site admin)
    status: int = 200


def succeeded_run(team: Team, requester: Any, name: str, title: str = "") -> ApprovalRequest:
    """A run as the engine leaves it after success, waiting on its publish request (with the
    defaults: version 0.1.0, visible to the team); `title`: the project's name, if not `name`."""
    files = plugin_tree(name=name)
    project = Project.objects.create(team=team, requester=requester, name=title or name,
                                     status=Project.Status.AWAITING_APPROVAL,
                                     spec={"name": name, "commands": []})
    run = Run.objects.create(project=project, status=Run.Status.SUCCEEDED, iteration=1,
                             phase=Run.Phase.DONE)
    run.best_iteration = Iteration.objects.create(
        run=run, number=1, files=files, pass_rate=1.0, acceptance_passed=True, tests_ran=True,
        succeeded=True, safety_verdict="pass", safety_report={"verdict": "pass", "findings": []},
        test_report={"passed": 1, "failed": 0, "errors": 0, "pass_rate": 1.0, "outcomes": [
            {"nodeid": "tests/test_acceptance.py::test_example_1", "outcome": "passed"}]})
    run.save()
    return ApprovalRequest.objects.create(
        run=run, project=project, kind=ApprovalRequest.Kind.PUBLISH, iteration=1,
        payload={"reasoning": "The run succeeded.", "files": sorted(files),
                 **publish_payload_default(team=team, files=files)})


def journey_data() -> dict[str, Any]:
    """Team acme: requesters quinn and colin, reviewer rob, admin alice (who invited ivy), a
    site admin sam in no team, and everything the journey's pages show. The upload's checks
    run here, in the sandbox (a few seconds).

    Built in a thread of its own: the services announce changes through channels'
    async_to_sync, which refuses to run where Playwright's loop runs (see conftest.py)."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(_journey_data).result()


def _journey_data() -> dict[str, Any]:
    try:
        return _build()
    finally:
        connections.close_all()


def _build() -> dict[str, Any]:
    team = TeamFactory(slug="acme", name="Acme")
    users = {name: UserFactory(username=name) for name in ("quinn", "colin", "rob", "alice")}
    for name, role in (("quinn", "requester"), ("colin", "requester"), ("rob", "reviewer"),
                       ("alice", "admin")):
        MembershipFactory(team=team, user=users[name], role=role)
    demo = demo_data.build(team, users["quinn"], users["colin"])
    plan_run = run_with_history(project=Project.objects.create(
        team=team, requester=users["quinn"], name="invoice-matcher",
        status=Project.Status.AWAITING_APPROVAL, spec={"name": "invoice-matcher"}))
    plan = approval_for(plan_run, kind=ApprovalRequest.Kind.PLAN)
    stuck_run = run_with_history(project=Project.objects.create(
        team=team, requester=users["colin"], name="receipt-reader",
        status=Project.Status.ESCALATED, spec={"name": "receipt-reader"}),
        status=Run.Status.ESCALATED)
    escalation = approval_for(stuck_run, kind=ApprovalRequest.Kind.ESCALATION,
                              reason="the same error three times", question="What now?")
    budget_run = run_with_history(project=Project.objects.create(
        team=team, requester=users["colin"], name="price-watch",
        status=Project.Status.AWAITING_APPROVAL, spec={"name": "price-watch"}),
        status=Run.Status.AWAITING_APPROVAL, budget=Decimal("2.00"), cost=Decimal("2.10"))
    budget = ApprovalRequest.objects.create(
        run=budget_run, project=budget_run.project, kind=ApprovalRequest.Kind.BUDGET,
        iteration=budget_run.iteration, payload=BudgetState(
            scope="run", spent=Decimal("2.10"), limit=Decimal("2.00"),
            more=Decimal("2.00")).payload())
    team.monthly_budget, team.run_budget = Decimal("50.00"), Decimal("2.00")
    team.save()
    spend_record(team_id=team.pk, cost=Decimal("41.30"))
    publish = succeeded_run(team, users["quinn"], "word-count")
    live = succeeded_run(team, users["colin"], "meeting-digest")
    publish_request_approve(approval=live, user=users["rob"], comment="Good.",
                            candidate=approval_candidate(live), version="0.1.0",
                            visibility="team", category="text")
    uploaded = plugin_upload_submit(
        team=team, user=users["quinn"], filename="plugin.zip", visibility="team",
        data=zip_bytes(plugin_tree(name="text-stats")))
    assert uploaded.status == PluginVersion.Status.PENDING, uploaded.check_errors
    users["ivy"] = UserFactory(username="ivy")
    users["sam"] = UserFactory(username="sam", is_staff=True)
    invitation_send(team=team, invited_as="ivy", role="reviewer", actor=users["alice"])
    invitation_send(team=team, invited_as="someone@example.org", role="requester",
                    actor=users["alice"])
    _tool_with_a_schedule_that_ran(team, users["alice"], users["rob"])
    return {"team": team, "demo": demo, "plan": plan, "escalation": escalation, "budget": budget,
            "publish": publish, "uploaded": uploaded, **users}


def _tool_with_a_schedule_that_ran(team: Team, admin: Any, reviewer: Any) -> None:
    """month-totals in use, with a schedule whose call ran in the sandbox (its answer shows on
    the tool's page and behind the log)."""
    asked = activation_request(team=team, version=publish_version(team), user=admin)
    active = activation_decide(activation=asked, user=admin, approve=True)
    schedule = schedule_create(activation=active, user=reviewer, name="Month end",
                               command="totals", when="every 1 hour",
                               payload={"rows": [{"month": "Mar", "amount": 7}]})
    Schedule.objects.filter(pk=schedule.pk).update(next_run_at=timezone.now())
    schedules_due_send()
    for queued in Invocation.objects.filter(status=Invocation.Status.PENDING):
        invocation_perform(invocation_id=queued.pk)  # the activation event and the call


def journey_pages(data: dict[str, Any]) -> list[JourneyPage]:
    """The journey's pages after the wizard (see walk_wizard), each once."""
    run, change = data["demo"].run, data["demo"].change
    uploaded = data["uploaded"]

    def approval(name: str) -> JourneyPage:
        return JourneyPage(f"approval: {name}",
                           reverse("approval_detail", args=[data[name].pk]), "rob")

    return [
        JourneyPage("home", reverse("home"), "rob"),
        JourneyPage("board", reverse("board", args=["acme"]), "rob"),
        JourneyPage("run", reverse("run_detail", args=[run.pk]), "rob"),
        JourneyPage("run: side-by-side diff", reverse("run_detail", args=[run.pk])
                    + "?iteration=3&against=2&view=split", "rob"),
        JourneyPage("reviews", reverse("approval_list"), "rob"),
        JourneyPage("approval: change", reverse("approval_detail", args=[change.pk]), "rob"),
        approval("plan"),
        approval("escalation"),
        approval("publish"),
        JourneyPage("approval: budget, as an admin",
                    reverse("approval_detail", args=[data["budget"].pk]), "alice"),
        JourneyPage("run waiting at its budget, as its requester",
                    reverse("run_detail", args=[data["budget"].run_id]), "colin"),
        JourneyPage("approval: change, as its requester",
                    reverse("approval_detail", args=[change.pk]), "quinn"),
        JourneyPage("uploaded version", reverse("marketplace:version", args=[
            uploaded.plugin.name, uploaded.version]), "rob"),
        JourneyPage("marketplace", reverse("marketplace:catalogue"), "rob"),
        JourneyPage("marketplace: search without hits",
                    reverse("marketplace:catalogue") + "?q=zzzz-nothing", "rob"),
        JourneyPage("plugin", reverse("marketplace:plugin", args=["meeting-digest"]), "rob"),
        JourneyPage("upload", reverse("marketplace:upload"), "quinn"),
        JourneyPage("lessons", reverse("lessons:list"), "rob"),
        JourneyPage("audit log", reverse("audit_log", args=["acme"]), "rob"),
        JourneyPage("how generation is going", reverse("team_insights", args=["acme"]), "rob"),
        JourneyPage("team", reverse("team_detail", args=["acme"]), "alice"),
        JourneyPage("team settings", reverse("team_settings", args=["acme"]), "alice"),
        JourneyPage("invitations, as the invited person", reverse("invitation_list"), "ivy"),
        JourneyPage("home, with an invitation", reverse("home"), "ivy"),
        JourneyPage("home, with the requester's requests", reverse("home"), "quinn"),
        JourneyPage("model prices", reverse("llm:model_prices"), "sam"),
        JourneyPage("start a team, refused", reverse("team_new"), "quinn", 403),
        JourneyPage("site settings for teams", reverse("site_team_settings"), "sam"),
        JourneyPage("tools", reverse("tools:list", args=["acme"]), "rob"),
        JourneyPage("tool with a schedule's results",
                    reverse("tools:detail", args=["acme", "month-totals"]), "rob"),
        JourneyPage("tool log with a schedule's results",
                    reverse("tools:log", args=["acme", "month-totals"]), "rob"),
        JourneyPage("notifications", reverse("notification_list"), "rob"),
        JourneyPage("error: 404", "/no-such-page/", "rob", 404),
        JourneyPage("error: 403", reverse("audit_log", args=["acme"]), "quinn", 403),
    ]


Check = Callable[[Page, str], None]


def visit(page: Page, base_url: str, step: JourneyPage) -> None:
    response = page.goto(f"{base_url}{step.path.lstrip('/')}")
    assert response is not None and response.status == step.status, (step, response)


def walk_wizard(page: Page, check: Check) -> None:
    """A requester's interview from "New request" to its summary, `check` called on each step
    (the describe page, the five question pages, the summary)."""
    page.get_by_role("link", name="New request").first.click()
    expect(page.get_by_role("heading", name="What do you need?")).to_be_visible()
    check(page, "wizard: describe")
    describe(page)
    check(page, "wizard: page 1, what it should do")
    answer_actions(page)
    check(page, "wizard: page 2, what goes in and comes back")
    page.get_by_label("What will you give it for \u201cgreet\u201d?").fill("name")
    page.get_by_label("What should you get back from \u201cgreet\u201d?").fill("message")
    continue_(page)
    expect(page.get_by_role("group", name="Example 1", exact=True)).to_be_visible()
    check(page, "wizard: page 3, examples")
    fill_example(page, 1, "name: Ada", "message: Hello, Ada!")
    fill_example(page, 2, "name: Linus", "message: Hello, Linus!")
    page.get_by_label("What should \u201cgreet\u201d do when something is missing or looks "
                      "wrong?").fill("Refuse an empty name with a clear message.")
    continue_(page)
    expect(page.get_by_label("Semi-automatic")).to_be_visible()
    check(page, "wizard: page 4, checks and rules")
    continue_(page)
    expect(page.get_by_label("Should the greeting be formal or casual?")).to_be_visible()
    check(page, "wizard: page 5, the analyst's questions")
    page.get_by_label("Should the greeting be formal or casual?").fill("Casual.")
    continue_(page)
    expect(page.get_by_role("heading", name="Check your request")).to_be_visible()
    check(page, "wizard: summary")
