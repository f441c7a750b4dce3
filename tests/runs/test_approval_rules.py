"""The same decision gets the same answer whichever door it comes through: the review page, the
`approve` command, the engine's `approval_decide` and the marketplace's version decision (a
generated version's publish request, an uploaded version's gate). The rules are in
runs/approval_rules.py; a refused decision changes nothing in the database."""

from __future__ import annotations

import html
import io
import re
from collections.abc import Callable
from typing import Any

import pytest
from django.core.exceptions import PermissionDenied
from django.core.management import CommandError, call_command
from django.urls import reverse

from marketplace.models import Plugin, PluginVersion, VersionDecision
from marketplace.services.gate import plugin_version_decide
from runs import approval_rules as rules
from runs.models import ApprovalRequest, ApprovalVote, Project, Run
from runs.selectors.approvals import approvals_awaiting
from runs.services import deciding
from teams.models import AuditEntry, Membership, Notification
from tests.projects.portal_factories import ProjectFactory, approval_for, run_with_history
from tests.teams.conftest import Portal

pytestmark = pytest.mark.django_db

A = ApprovalRequest.Status
STARTER = ("You started or retried this run: Acme does not let the author of a change decide "
           "it, so another reviewer has to.")
REQUESTER = ("You asked for this project: Acme does not let the author of a change decide it, "
             "so another reviewer has to.")
NOT_A_REVIEWER = "Only reviewers and admins of Acme decide approval requests."
SUBMITTER = ("You submitted this version: Acme does not let the author of a change decide it, "
             "so another reviewer has to.")
ALERT = re.compile(r'role="alert">(.*?)</p>', re.S)

# A door decides `gate` (a run's publish request) as `user`: it returns the refusal's words, or
# "" when the decision was taken.
Door = Callable[[Portal, Any, ApprovalRequest], str]


def page(portal: Portal, user: Any, gate: ApprovalRequest) -> str:
    response = portal.client(user).post(reverse("approval_decide", args=[gate.pk]), {
        "decision": "approve", "comment": "", "candidate": rules.approval_candidate(gate)})
    if response.status_code == 302:
        return ""
    assert response.status_code == 403, response.status_code
    return html.unescape(ALERT.search(response.content.decode()).group(1))


def command(portal: Portal, user: Any, gate: ApprovalRequest) -> str:
    try:
        call_command("approve", str(gate.run_id), "--as", user.username, "--enqueue",
                     stdout=io.StringIO())
    except CommandError as error:
        return str(error)
    return ""


def engine_service(portal: Portal, user: Any, gate: ApprovalRequest) -> str:
    try:
        deciding.approval_decide(approval=gate, user=user, decision="approve", dispatch=None)
    except rules.ApprovalRefused as error:
        return str(error)
    return ""


def marketplace_version(portal: Portal, user: Any, gate: ApprovalRequest) -> str:
    version = PluginVersion.objects.get(approval=gate)
    try:
        plugin_version_decide(version=version, user=user, approve=True)
    except PermissionDenied as error:
        return str(error)
    return ""


DOORS = [page, command, engine_service, marketplace_version]


def plugin_version(portal: Portal, *, submitted_by: Any, gate: ApprovalRequest | None = None,
                   name: str = "weekly-scheduler") -> PluginVersion:
    """A version waiting at the publish gate, as the marketplace's checks leave it."""
    plugin, _ = Plugin.objects.get_or_create(normalized_name=name,
                                             defaults={"name": name, "team": portal.team})
    source = PluginVersion.Source.RUN if gate else PluginVersion.Source.UPLOAD
    return PluginVersion.objects.create(
        plugin=plugin, version=f"0.{PluginVersion.objects.count() + 1}.0", source=source,
        visibility=Plugin.Visibility.TEAM, source_sha256="0" * 64, submitted_by=submitted_by,
        run=gate.run if gate else None, approval=gate)


@pytest.fixture
def publish_gate(portal: Portal) -> Callable[[], ApprovalRequest]:
    """quinn's project, a run rita started (or retried), waiting on its publish request, and
    the version the run submitted to the marketplace (its gate is the publish request)."""
    def make() -> ApprovalRequest:
        project = ProjectFactory(team=portal.team, requester=portal.requester,
                                 status=Project.Status.AWAITING_APPROVAL)
        run = run_with_history(project=project, status=Run.Status.SUCCEEDED,
                               phase=Run.Phase.DONE, started_by=portal.reviewer)
        gate = approval_for(run, kind=ApprovalRequest.Kind.PUBLISH)
        plugin_version(portal, submitted_by=portal.requester, gate=gate)
        return gate
    return make


def database(gate: ApprovalRequest) -> dict[str, Any]:
    """What a decision could change."""
    run = Run.objects.get(pk=gate.run_id)
    return {"gate": ApprovalRequest.objects.filter(pk=gate.pk).values().get(),
            "run": (run.status, run.phase, run.step_token, run.guidance),
            "project": Project.objects.get(pk=gate.project_id).status,
            "votes": ApprovalVote.objects.count(), "audit": AuditEntry.objects.count(),
            "notifications": Notification.objects.count(),
            "versions": list(PluginVersion.objects.values_list("pk", "status")),
            "version_decisions": VersionDecision.objects.count()}


# -- the same forbidden decision through every door ---------------------------------------------


@pytest.mark.parametrize("door", DOORS, ids=lambda door: door.__name__)
@pytest.mark.parametrize(("who", "refusal"), [
    ("reviewer", STARTER),  # rita started the run: her own change, alone
    ("requester", REQUESTER),  # quinn asked for the project
    ("colleague", NOT_A_REVIEWER),  # colin is a requester of the team, not its author
])
def test_a_forbidden_decision_is_refused_alike_at_every_door(
        portal: Portal, publish_gate: Callable[[], ApprovalRequest], door: Door, who: str,
        refusal: str) -> None:
    gate = publish_gate()
    before = database(gate)
    assert door(portal, getattr(portal, who), gate) == refusal
    assert database(gate) == before


@pytest.mark.parametrize(("who", "refusal"), [
    ("reviewer", SUBMITTER), ("colleague", NOT_A_REVIEWER)])
def test_an_uploaded_version_follows_the_same_rule(portal: Portal, who: str,
                                                  refusal: str) -> None:
    version = plugin_version(portal, submitted_by=portal.reviewer)
    with pytest.raises(rules.MayNotDecide) as refused:
        plugin_version_decide(version=version, user=getattr(portal, who),
                              approve=True)
    assert str(refused.value) == refusal
    version.refresh_from_db()
    assert version.status == PluginVersion.Status.PENDING
    assert not VersionDecision.objects.exists() and not AuditEntry.objects.exists()


@pytest.mark.parametrize("authors_may_approve", [False, True])
def test_the_review_list_offers_a_gate_to_exactly_those_the_rule_lets_decide(
        portal: Portal, publish_gate: Callable[[], ApprovalRequest],
        authors_may_approve: bool) -> None:
    portal.team.requester_may_approve = authors_may_approve
    portal.team.save()
    gate = publish_gate()
    for membership in Membership.objects.filter(team=portal.team).select_related("user"):
        listed = gate in approvals_awaiting(membership.user)
        refusal = rules.gate_refusal(membership=membership, approval=gate)
        assert listed == (not refusal), (membership.user.username, refusal)


# -- allowed decisions go through every door ----------------------------------------------------


@pytest.mark.parametrize("door", DOORS, ids=lambda door: door.__name__)
def test_another_reviewer_decides_at_every_door(
        portal: Portal, publish_gate: Callable[[], ApprovalRequest], door: Door) -> None:
    gate = publish_gate()
    assert door(portal, portal.admin, gate) == ""
    gate.refresh_from_db()
    assert (gate.status, gate.decided_by) == (A.APPROVED, portal.admin)
    version = PluginVersion.objects.get(approval=gate)
    # The voting doors settle the waiting version at once; a decision made straight in the
    # engine leaves that to the marketplace (publish_approval_decided) as before.
    expected = "pending" if door is engine_service else "published"
    assert version.status == expected


@pytest.mark.parametrize("door", DOORS, ids=lambda door: door.__name__)
def test_where_the_team_allows_it_the_starter_decides_at_every_door(
        portal: Portal, publish_gate: Callable[[], ApprovalRequest], door: Door) -> None:
    portal.team.requester_may_approve = True
    portal.team.save()
    gate = publish_gate()
    assert door(portal, portal.reviewer, gate) == ""
    gate.refresh_from_db()
    assert (gate.status, gate.decided_by) == (A.APPROVED, portal.reviewer)


def test_an_uploaded_version_is_published_by_another_reviewer(portal: Portal) -> None:
    version = plugin_version(portal, submitted_by=portal.requester)
    decided = plugin_version_decide(version=version, user=portal.reviewer,
                                    approve=True)
    assert decided.status == PluginVersion.Status.PUBLISHED


# -- N approvals and stale candidates are the same everywhere -----------------------------------


def test_the_engine_does_not_open_a_gate_short_of_its_approvals(
        portal: Portal, publish_gate: Callable[[], ApprovalRequest]) -> None:
    portal.team.required_approvals = 2
    portal.team.save()
    gate = publish_gate()
    before = database(gate)
    with pytest.raises(rules.NotEnoughApprovals, match="needs 2 approvals and would have 1"):
        deciding.approval_decide(approval=gate, user=portal.admin, decision="approve",
                               dispatch=None)
    assert database(gate) == before
    assert command(portal, portal.admin, gate) == ""  # a vote: 1 of 2, the gate still waits
    gate.refresh_from_db()
    assert gate.status == A.PENDING and gate.votes.count() == 1
    # Closing decisions need no tally, through the engine as on the page.
    deciding.approval_decide(approval=gate, user=portal.admin, decision="reject", dispatch=None)
    gate.refresh_from_db()
    assert gate.status == A.REJECTED


def test_a_changed_candidate_is_refused_alike_by_the_page_and_the_engine(
        portal: Portal, publish_gate: Callable[[], ApprovalRequest]) -> None:
    seen = publish_gate()  # what the reviewer looked at
    ApprovalRequest.objects.filter(pk=seen.pk).update(payload={"reasons": ["a new candidate"]})
    response = portal.client(portal.admin).post(reverse("approval_decide", args=[seen.pk]), {
        "decision": "approve", "comment": "", "candidate": rules.approval_candidate(seen)})
    assert response.status_code == 409
    with pytest.raises(rules.StaleCandidate) as refused:
        deciding.approval_decide(approval=seen, user=portal.admin, decision="approve",
                               dispatch=None)
    assert html.escape(str(refused.value)) in response.content.decode()
    seen.refresh_from_db()
    assert seen.status == A.PENDING and not seen.votes.exists()


def test_one_table_of_decisions(portal: Portal) -> None:
    """The form's choices and every door read the same table."""
    assert [d.value for d in rules.decisions_allowed(ApprovalRequest.Kind.ESCALATION)] == [
        "answer", "reject"]
    with pytest.raises(rules.DecisionNotAccepted, match="decided with: answer with guidance"):
        rules.decision_status(ApprovalRequest.Kind.ESCALATION, "approve", "looks fine")
    with pytest.raises(rules.DecisionNotAccepted, match="To change the plugin"):
        rules.decision_status(ApprovalRequest.Kind.PUBLISH, "request_changes", "more tests")
    assert rules.decision_status(ApprovalRequest.Kind.CHANGE, "request_changes",
                                 "use 24-hour times") == A.CHANGES_REQUESTED
