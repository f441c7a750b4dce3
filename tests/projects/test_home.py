"""A requester's home lists their requests: each with its plain status and a link to its run,
drafts marked as drafts, nothing of other people's or other teams' requests."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from projects.models import Interview
from runs.models import Project, Run
from tests.factories import MembershipFactory, TeamFactory, UserFactory
from tests.projects.portal_factories import ProjectFactory, RunFactory

pytestmark = pytest.mark.django_db


def home_of(user: object) -> str:
    client = Client()
    client.force_login(user)  # type: ignore[arg-type]
    return client.get(reverse("home")).content.decode()


def test_a_requesters_home_lists_their_requests_with_plain_status_and_run_links(
        team_with_roles: dict) -> None:
    """The probe's requester saw "No plugins requested yet" with a run under way."""
    member, team = team_with_roles["member"], team_with_roles["team"]
    building = ProjectFactory(team=team, requester=member, name="meeting-counter",
                              status=Project.Status.GENERATING)
    run = RunFactory(project=building)
    ProjectFactory(team=team, requester=member, name="old-report",
                   status=Project.Status.PUBLISHED)
    ProjectFactory(team=team, requester=team_with_roles["owner"], name="someone-elses")
    html = home_of(member)
    assert "Your requests" in html and "No plugins requested yet" not in html
    assert "meeting-counter" in html and "Being built and tested" in html
    assert reverse("run_detail", args=[run.pk]) in html
    assert "old-report" in html and "Published in the marketplace" in html
    assert "someone-elses" not in html


def test_a_draft_is_marked_as_a_draft_beside_the_real_request_of_the_same_name(
        team_with_roles: dict) -> None:
    member, team = team_with_roles["member"], team_with_roles["team"]
    ProjectFactory(team=team, requester=member, name="meeting-counter",
                   status=Project.Status.QUEUED)
    draft = ProjectFactory(team=team, requester=member, name="meeting-counter",
                           status=Project.Status.INTERVIEWING)
    Interview.objects.create(team=team, requester=member, project=draft,
                             request="Count my meetings")
    html = home_of(member)
    assert "Waiting its turn" in html
    assert "Draft: not sent yet" in html
    assert html.count("meeting-counter") == 2


def test_requests_in_a_team_the_requester_left_are_not_listed() -> None:
    user, team = UserFactory(), TeamFactory()
    MembershipFactory(team=TeamFactory(), user=user, role="requester")
    ProjectFactory(team=team, requester=user, name="from-before")
    html = home_of(user)
    assert "from-before" not in html and "No plugins requested yet" in html


def test_each_state_of_a_request_is_said_as_it_is(team_with_roles: dict) -> None:
    """Issue 48: a run held by a broken model is not "waiting its turn", and one a person
    cancelled is not one that "could not be built"."""
    member, team = team_with_roles["member"], team_with_roles["team"]
    held = ProjectFactory(team=team, requester=member, name="held-one",
                          status=Project.Status.QUEUED)
    RunFactory(project=held, status=Run.Status.HELD, held_by="model_reach")
    cancelled = ProjectFactory(team=team, requester=member, name="cancelled-one",
                               status=Project.Status.FAILED)
    RunFactory(project=cancelled, status=Run.Status.CANCELLED, error="cancelled")
    stopped = ProjectFactory(team=team, requester=member, name="stopped-one",
                             status=Project.Status.FAILED)
    RunFactory(project=stopped, status=Run.Status.ABORTED,
               error="stopped by rob at an escalation: enough")
    failed = ProjectFactory(team=team, requester=member, name="failed-one",
                            status=Project.Status.FAILED)
    RunFactory(project=failed, status=Run.Status.FAILED, error="all 6 attempts were used")
    queued = ProjectFactory(team=team, requester=member, name="queued-one",
                            status=Project.Status.QUEUED)
    RunFactory(project=queued, status=Run.Status.QUEUED)
    html = " ".join(home_of(member).split())

    def label(name: str) -> str:
        return html.split(f">{name}<", 1)[1].split("request-status", 1)[1].split("</span>")[0]

    assert "generation cannot reach the model; your admins have been told" in label("held-one")
    assert "Cancelled by a person" in label("cancelled-one")
    assert "Stopped by a person" in label("stopped-one")
    assert "Stopped: it could not be built" in label("failed-one")
    assert "Waiting its turn" in label("queued-one")
