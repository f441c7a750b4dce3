"""Integrity rules as trusted review systems enforce them: votes count only while the voter may
still decide, whoever started a run is treated like its author, removed members stop hearing
the team's live events, password spraying is slowed, and the audit log cannot be truncated."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.test import Client
from django.urls import reverse
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from autocoder import realtime
from projects.selectors.board import my_review_project_ids
from runs.approval_rules import approval_candidate
from runs.models import ApprovalRequest, Project, Run
from runs.selectors.approvals import approvals_awaiting
from teams.models import AuditEntry, Membership
from teams.services.audit import audit_record
from tests.factories import PASSWORD, UserFactory
from tests.live import LiveServer, live_asgi_server
from tests.projects.portal_factories import ProjectFactory, approval_for, run_with_history
from tests.teams.conftest import Portal

A = ApprovalRequest.Status


def post_decision(portal: Portal, user: Any, approval: ApprovalRequest, decision: str) -> Any:
    return portal.client(user).post(reverse("approval_decide", args=[approval.pk]), {
        "decision": decision, "comment": "", "candidate": approval_candidate(approval)})


@pytest.fixture
def two_approvals(portal: Portal) -> ApprovalRequest:
    portal.team.required_approvals = 2
    portal.team.save()
    project = ProjectFactory(team=portal.team, requester=portal.requester,
                             status=Project.Status.AWAITING_APPROVAL)
    return approval_for(run_with_history(project=project, status=Run.Status.AWAITING_APPROVAL,
                                         phase=Run.Phase.REFLECT))


# -- a vote counts only while its voter may still decide ----------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("change", ["removed", "demoted"])
def test_a_vote_stops_counting_when_its_voter_may_no_longer_decide(
        portal: Portal, two_approvals: ApprovalRequest, change: str) -> None:
    assert post_decision(portal, portal.reviewer, two_approvals, "approve").status_code == 302
    leaving = Membership.objects.filter(team=portal.team, user=portal.reviewer)
    if change == "removed":
        leaving.delete()
    else:
        leaving.update(role=Membership.Role.REQUESTER)
    assert post_decision(portal, portal.admin, two_approvals, "approve").status_code == 302
    two_approvals.refresh_from_db()
    assert two_approvals.status == A.PENDING  # 1 of 2: the first vote no longer counts
    page = portal.client(portal.admin).get(reverse("approval_detail", args=[two_approvals.pk]))
    assert page.context["tally"].approvals == 1


# -- whoever started or retried a run is treated like its author --------------------------------


def finished_run(portal: Portal) -> Run:
    project = ProjectFactory(team=portal.team, requester=portal.requester, spec={
        "name": "weekly-scheduler", "summary": "Plans a week.", "commands": [
            {"name": "plan", "description": "d", "examples": [
                {"input": {"a": 1}, "output": {"b": 2}},
                {"input": {"a": 2}, "output": {"b": 3}}]}]})
    return run_with_history(project=project, status=Run.Status.FAILED,
                            script={"implementer": ["nothing"]})


def needs_my_review(portal: Portal, user: Any, project: Project) -> bool:
    membership = Membership.objects.get(team=portal.team, user=user)
    return project.pk in my_review_project_ids(team=portal.team, membership=membership)


@pytest.mark.django_db
def test_whoever_retried_a_run_cannot_approve_its_gates_alone(portal: Portal) -> None:
    old = finished_run(portal)
    retry = reverse("run_control", args=[old.pk, "retry"])
    assert portal.client(portal.reviewer).post(retry).status_code == 302
    retried = Run.objects.filter(project=old.project).order_by("-id").first()
    assert retried.pk != old.pk and retried.started_by == portal.reviewer
    gate = approval_for(retried)

    assert gate not in approvals_awaiting(portal.reviewer)
    assert gate in approvals_awaiting(portal.admin)
    assert not needs_my_review(portal, portal.reviewer, retried.project)  # the board's badge
    assert needs_my_review(portal, portal.admin, retried.project)
    assert post_decision(portal, portal.reviewer, gate, "approve").status_code == 403  # starter
    assert post_decision(portal, portal.colleague, gate, "approve").status_code == 403  # member
    assert post_decision(portal, portal.outsider, gate, "approve").status_code == 404
    assert post_decision(portal, portal.admin, gate, "approve").status_code == 302  # another
    gate.refresh_from_db()
    assert gate.status == A.APPROVED and gate.decided_by == portal.admin


@pytest.mark.django_db
def test_the_engine_refuses_the_starter_too(portal: Portal) -> None:
    from django.core.exceptions import PermissionDenied

    from runs.services import deciding

    run = run_with_history(project=ProjectFactory(team=portal.team, requester=portal.requester),
                           status=Run.Status.AWAITING_APPROVAL, started_by=portal.reviewer)
    with pytest.raises(PermissionDenied):
        deciding.approval_decide(approval=approval_for(run), user=portal.reviewer,
                               decision="approve", dispatch=None)


# -- removed members stop receiving live events -------------------------------------------------


@pytest.fixture
def server(settings: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[LiveServer]:
    monkeypatch.setenv("WEBSOCKET_MEMBERSHIP_RECHECK_S", "0.5")
    with live_asgi_server() as live:
        yield live


def open_socket(server: LiveServer, path: str, user: Any) -> Any:
    client = Client()
    client.force_login(user)
    cookie = f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"
    return connect(f"{server.ws_url}{path}", open_timeout=10, additional_headers={
        "Origin": server.url.rstrip("/"), "Cookie": cookie})


@pytest.mark.django_db(transaction=True)
def test_a_removed_member_stops_receiving_the_teams_events(
        server: LiveServer, team_with_roles: dict[str, Any], clean_redis: object) -> None:
    team, owner, member = (team_with_roles[k] for k in ("team", "owner", "member"))
    run = run_with_history(project=ProjectFactory(team=team, requester=member))
    group = realtime.team_group(team.pk)
    with open_socket(server, "ws/teams/acme/", member) as gone, \
            open_socket(server, f"ws/runs/{run.pk}/", member) as gone_run, \
            open_socket(server, "ws/teams/acme/", owner) as stays:
        realtime.publish(group, {"kind": "first"})
        assert json.loads(gone.recv(timeout=10)) == {"kind": "first"}
        assert json.loads(stays.recv(timeout=10)) == {"kind": "first"}
        Membership.objects.filter(team=team, user=member).delete()
        time.sleep(1.0)  # past the re-check interval
        realtime.publish(group, {"kind": "secret"})
        realtime.publish(realtime.run_group(run.pk), {"kind": "secret run"})
        assert json.loads(stays.recv(timeout=10)) == {"kind": "secret"}
        for socket in (gone, gone_run):
            with pytest.raises(ConnectionClosed) as closed:
                socket.recv(timeout=10)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 4404


# -- password spraying from one address ---------------------------------------------------------


@pytest.mark.django_db
def test_many_user_names_failing_from_one_address_lock_that_address(settings: Any) -> None:
    victims = [UserFactory() for _ in range(settings.LOGIN_IP_FAILURE_LIMIT)]
    bystander = UserFactory()
    attacker, elsewhere = Client(REMOTE_ADDR="198.51.100.7"), Client(REMOTE_ADDR="198.51.100.8")
    for victim in victims[:-1]:  # one failure per name: no account reaches its own limit
        attacker.post(reverse("login"), {"username": victim.username, "password": "Summer2026"})
    # Below the address limit, a right password still works from there.
    own = attacker.post(reverse("login"), {"username": bystander.username, "password": PASSWORD})
    assert own.status_code == 302
    attacker.post(reverse("logout"))
    attacker.post(reverse("login"), {"username": victims[-1].username, "password": "Summer2026"})
    locked = attacker.post(reverse("login"),
                           {"username": bystander.username, "password": PASSWORD})
    assert locked.status_code == 429
    fine = elsewhere.post(reverse("login"), {"username": bystander.username, "password": PASSWORD})
    assert fine.status_code == 302  # only that address is locked


# -- the audit log cannot be truncated ----------------------------------------------------------


@pytest.mark.django_db
def test_the_audit_log_refuses_truncate(portal: Portal) -> None:
    audit_record(actor=portal.admin, action="team.settings_update", team=portal.team,
                 target_type="team", target_id=str(portal.team.pk), target_repr="acme")
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic(), \
            connection.cursor() as cursor:
        # The test suite's own connections may truncate (PGOPTIONS); the portal's may not.
        cursor.execute("SET LOCAL autocoder.audit_log_truncate = 'off'")
        cursor.execute("TRUNCATE projects_auditentry")
    assert AuditEntry.objects.count() == 1
