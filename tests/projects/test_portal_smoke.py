"""Every portal page answers for a member (smoke test; the behaviour is tested elsewhere)."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from runs.models import Project
from teams.models import Membership
from tests.factories import MembershipFactory
from tests.projects.portal_factories import ProjectFactory, approval_for, run_with_history

pytestmark = pytest.mark.django_db


def test_pages_render_for_a_reviewer(team_with_roles: dict) -> None:
    team, owner = team_with_roles["team"], team_with_roles["owner"]
    reviewer = MembershipFactory(team=team, role=Membership.Role.REVIEWER).user
    run = run_with_history(project=ProjectFactory(team=team, requester=team_with_roles["member"],
                                                  status=Project.Status.AWAITING_APPROVAL))
    approval = approval_for(run)
    ProjectFactory(team=team, status=Project.Status.QUEUED, queue_position=1)
    client = Client()
    client.force_login(reviewer)
    urls = [reverse("board", args=[team.slug]), reverse("run_detail", args=[run.pk]),
            reverse("run_detail", args=[run.pk]) + "?view=split&iteration=2&against=1",
            reverse("run_detail", args=[run.pk]) + "?view=code",
            reverse("approval_detail", args=[approval.pk]), reverse("approval_list"),
            reverse("notification_list"), reverse("audit_log", args=[team.slug]),
            reverse("team_detail", args=[team.slug])]
    for url in urls:
        response = client.get(url)
        assert response.status_code == 200, (url, response.content[:3000])
    assert owner
