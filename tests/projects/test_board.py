"""The team board: access, columns and cards, filters, the queue, and constant queries."""

from __future__ import annotations

import re
from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from projects.selectors.board import queued_projects
from runs.models import Iteration, Project, Run
from teams.models import AuditEntry
from tests.projects.portal_factories import ProjectFactory, RunFactory, approval_for
from tests.teams.conftest import Portal

pytestmark = pytest.mark.django_db
S = Project.Status


def board_url(slug: str = "acme", **params: str) -> str:
    query = "&".join(f"{k}={v}" for k, v in params.items())
    return reverse("board", args=[slug]) + (f"?{query}" if query else "")


def column_html(html: str, key: str) -> str:
    match = re.search(rf'<section class="board-column" id="col-{key}".*?</section>', html, re.S)
    assert match, f"column {key} missing"
    return match.group(0)


def test_members_see_the_board_outsiders_get_404(portal: Portal) -> None:
    ProjectFactory(team=portal.team, name="weekly-scheduler", requester=portal.requester)
    for user in (portal.admin, portal.reviewer, portal.requester):
        response = portal.client(user).get(board_url())
        assert response.status_code == 200
        assert "weekly-scheduler" in response.content.decode()
    assert portal.client(portal.outsider).get(board_url()).status_code == 404
    assert portal.client(portal.outsider).get(board_url("no-such")).status_code == 404
    anonymous = portal.client(None).get(board_url())
    assert anonymous.status_code == 302 and anonymous["Location"].startswith(reverse("login"))


def test_the_columns_that_need_a_person_come_first_then_the_flow(portal: Portal) -> None:
    html = portal.client(portal.reviewer).get(board_url()).content.decode()
    order = re.findall(r'<section class="board-column" id="col-([a-z_]+)"', html)
    assert order == ["awaiting_approval", "escalated_failed", "interviewing", "queued",
                     "generating", "succeeded", "published"]
    filter_choices = re.findall(r'<option value="([a-z_]+)"', html.split('name="status"')[1])
    assert filter_choices[:2] == ["awaiting_approval", "escalated_failed"]


def test_cards_sit_in_their_status_column_with_their_figures(portal: Portal) -> None:
    team = portal.team
    generating = ProjectFactory(team=team, name="csv-cleaner", status=S.GENERATING,
                                requester=portal.requester)
    Project.objects.filter(pk=generating.pk).update(  # auto_now_add: set after creation
        status_changed_at=timezone.now() - timedelta(minutes=42))
    run = RunFactory(project=generating, iteration=3, max_iterations=8, tokens_prompt=9000,
                     tokens_completion=1000)
    Iteration.objects.create(run=run, number=3, pass_rate=0.75, files={})
    ProjectFactory(team=team, name="old-failure", status=S.FAILED)
    ProjectFactory(team=team, name="escalated-one", status=S.ESCALATED)
    ProjectFactory(team=team, name="published-one", status=S.PUBLISHED)
    html = portal.client(portal.reviewer).get(board_url()).content.decode()

    card = column_html(html, "generating")
    assert "csv-cleaner" in card and "Requested by quinn" in card
    assert "3/8" in card and "75%" in card and "10,000" in card
    assert "42 min" in card  # time in column
    assert reverse("run_detail", args=[run.pk]) in card
    failed_col = column_html(html, "escalated_failed")
    assert "old-failure" in failed_col and "escalated-one" in failed_col
    assert "Needs a human" in failed_col  # an escalation waits for a person
    assert "published-one" in column_html(html, "published")
    assert "csv-cleaner" not in column_html(html, "queued")


def test_cards_show_the_latest_runs_cost_or_that_no_price_is_set(portal: Portal) -> None:
    team = portal.team
    priced = ProjectFactory(team=team, name="priced-one", status=S.GENERATING)
    RunFactory(project=priced, tokens_prompt=9000, tokens_completion=1000,
               cost=Decimal("0.0315"))
    unpriced = ProjectFactory(team=team, name="unpriced-one", status=S.SUCCEEDED)
    RunFactory(project=unpriced, tokens_prompt=500, tokens_completion=500, tokens_unpriced=1000)
    mixed = ProjectFactory(team=team, name="mixed-one", status=S.FAILED)
    RunFactory(project=mixed, tokens_prompt=500, tokens_completion=500, tokens_unpriced=200,
               cost=Decimal("12.5"))
    html = portal.client(portal.reviewer).get(board_url()).content.decode()

    assert "<dt>Cost</dt><dd>0.0315 USD</dd>" in column_html(html, "generating")
    assert "<dt>Cost</dt><dd>no price set</dd>" in column_html(html, "succeeded")
    assert "<dt>Cost</dt><dd>12.50 USD, part: no price set</dd>" in column_html(
        html, "escalated_failed")


def test_pending_approval_shows_a_badge_linking_to_the_request(portal: Portal) -> None:
    project = ProjectFactory(team=portal.team, name="needs-review", requester=portal.requester,
                             status=S.AWAITING_APPROVAL)
    approval = approval_for(RunFactory(project=project, status=Run.Status.AWAITING_APPROVAL))
    reviewer_html = portal.client(portal.reviewer).get(board_url()).content.decode()
    card = column_html(reviewer_html, "awaiting_approval")
    assert "Needs a human: your review" in card
    assert reverse("approval_detail", args=[approval.pk]) in card
    # The requester cannot approve their own project here (team default): no "your review".
    requester_html = portal.client(portal.requester).get(board_url()).content.decode()
    assert "your review" not in column_html(requester_html, "awaiting_approval")
    assert "Needs a human" in column_html(requester_html, "awaiting_approval")


def test_filters_mine_review_status_and_text(portal: Portal) -> None:
    team = portal.team
    ProjectFactory(team=team, name="mine-queued", requester=portal.reviewer, status=S.QUEUED)
    ProjectFactory(team=team, name="theirs-queued", requester=portal.requester, status=S.QUEUED)
    review = ProjectFactory(team=team, name="theirs-review", requester=portal.requester,
                            status=S.AWAITING_APPROVAL)
    approval_for(RunFactory(project=review))
    ProjectFactory(team=team, name="csv-tool", requester=portal.colleague, status=S.SUCCEEDED)
    client = portal.client(portal.reviewer)

    def names(**params: str) -> set[str]:
        html = client.get(board_url(**params)).content.decode()
        return set(re.findall(r'<h3 class="card-name">(?:<a [^>]*>)?([\w-]+)', html))

    assert names(mine="1") == {"mine-queued"}
    assert names(review="1") == {"theirs-review"}
    assert names(status="succeeded") == {"csv-tool"}
    assert names(q="CSV") == {"csv-tool"}
    assert names(q="quinn") == {"theirs-queued", "theirs-review"}  # requester's name
    assert names(status="nonsense") == {"mine-queued", "theirs-queued", "theirs-review",
                                        "csv-tool"}
    assert "No card matches the filters." in client.get(board_url(q="zzz")).content.decode()


def test_needs_my_review_drops_a_request_once_i_voted(portal: Portal) -> None:
    portal.team.required_approvals = 2
    portal.team.save()
    project = ProjectFactory(team=portal.team, name="two-approvals", requester=portal.requester,
                             status=S.AWAITING_APPROVAL)
    approval = approval_for(RunFactory(project=project, status=Run.Status.AWAITING_APPROVAL))
    from runs.approval_rules import approval_candidate
    from runs.services.approvals import approval_vote_cast

    approval_vote_cast(approval=approval, user=portal.reviewer, decision="approve",
                       candidate=approval_candidate(approval))
    assert "two-approvals" not in portal.client(portal.reviewer).get(
        board_url(review="1")).content.decode()
    assert "two-approvals" in portal.client(portal.admin).get(
        board_url(review="1")).content.decode()


def test_htmx_request_gets_only_the_board_fragment(portal: Portal) -> None:
    ProjectFactory(team=portal.team, name="fragment-card")
    response = portal.client(portal.reviewer).get(board_url(), HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="board"') and "<html" not in html
    assert "fragment-card" in html


def test_empty_board_explains_what_will_appear(portal: Portal) -> None:
    html = portal.client(portal.requester).get(board_url()).content.decode()
    assert "No projects yet" in html
    assert 'aria-live="polite"' in html  # the live region announces updates


# -- the queue ----------------------------------------------------------------------------------


def queue_names(portal: Portal) -> list[str]:
    return [p.name for p in queued_projects(portal.team)]


@pytest.fixture
def queue(portal: Portal) -> list[Project]:
    return [ProjectFactory(team=portal.team, name=name, status=S.QUEUED, queue_position=i)
            for i, name in enumerate(["first", "second", "third"], start=1)]


def move_url(project: Project) -> str:
    return reverse("board_queue_move", args=["acme", project.pk])


def test_move_down_without_javascript_persists_and_returns_to_the_board(
        portal: Portal, queue: list[Project]) -> None:
    response = portal.client(portal.reviewer).post(move_url(queue[0]), {"direction": "down"})
    assert response.status_code == 302
    assert response["Location"] == board_url() + f"#card-{queue[0].pk}"
    assert queue_names(portal) == ["second", "first", "third"]
    entry = AuditEntry.objects.get(action="project.queue_move")
    assert (entry.before, entry.after, entry.actor_name) == ({"position": 1}, {"position": 2},
                                                             "rita")


def test_move_up_at_the_top_changes_nothing(portal: Portal, queue: list[Project]) -> None:
    portal.client(portal.admin).post(move_url(queue[0]), {"direction": "up"})
    assert queue_names(portal) == ["first", "second", "third"]
    assert not AuditEntry.objects.exists()


def test_drop_after_another_card_with_htmx_returns_the_new_board(
        portal: Portal, queue: list[Project]) -> None:
    response = portal.client(portal.reviewer).post(
        move_url(queue[0]), {"after": str(queue[2].pk)}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    assert queue_names(portal) == ["second", "third", "first"]
    queued_col = column_html(response.content.decode(), "queued")
    assert queued_col.index("second") < queued_col.index("third") < queued_col.index("first")
    portal.client(portal.reviewer).post(move_url(queue[2]), {"after": ""})
    assert queue_names(portal) == ["third", "second", "first"]


def test_requesters_cannot_reorder_and_see_no_controls(portal: Portal,
                                                       queue: list[Project]) -> None:
    client = portal.client(portal.requester)
    assert client.post(move_url(queue[2]), {"direction": "up"}).status_code == 403
    assert client.post(move_url(queue[2]), {"after": ""}).status_code == 403
    assert queue_names(portal) == ["first", "second", "third"]
    html = client.get(board_url()).content.decode()
    assert "Move up" not in html and 'draggable="true"' not in html
    assert portal.client(portal.outsider).post(move_url(queue[2]),
                                               {"direction": "up"}).status_code == 404


def test_moving_a_project_that_left_the_queue_explains_why(portal: Portal,
                                                           queue: list[Project]) -> None:
    Project.objects.filter(pk=queue[1].pk).update(status=S.GENERATING, queue_position=0)
    response = portal.client(portal.reviewer).post(move_url(queue[1]), {"direction": "up"},
                                                   follow=True)
    assert "“second” is no longer queued" in response.content.decode()
    assert queue_names(portal) == ["first", "third"]


def test_bad_direction_and_bad_position_are_refused_clearly(portal: Portal,
                                                            queue: list[Project]) -> None:
    client = portal.client(portal.reviewer)
    bad = client.post(move_url(queue[1]), {"direction": "sideways"}, follow=True)
    assert "Choose to move the project up or down." in bad.content.decode()
    worse = client.post(move_url(queue[1]), {"position": "x"}, follow=True)
    assert "That is not a place in the queue." in worse.content.decode()
    assert queue_names(portal) == ["first", "second", "third"]


def test_projects_queued_without_a_place_join_at_the_end(portal: Portal,
                                                         queue: list[Project]) -> None:
    ProjectFactory(team=portal.team, name="late", status=S.QUEUED, queue_position=0)
    assert queue_names(portal) == ["first", "second", "third", "late"]
    portal.client(portal.reviewer).post(move_url(queue[0]), {"position": "99"})
    assert queue_names(portal) == ["second", "third", "late", "first"]
    assert list(queued_projects(portal.team).values_list("queue_position", flat=True)) == [
        1, 2, 3, 4]


# -- speed -------------------------------------------------------------------------------------


def fill(portal: Portal, count: int) -> None:
    statuses = list(S.values)
    projects = ProjectFactory.create_batch(count, team=portal.team, requester=portal.requester)
    for i, project in enumerate(projects):
        project.status = statuses[i % len(statuses)]
        project.queue_position = i + 1 if project.status == S.QUEUED else 0
    Project.objects.bulk_update(projects, ["status", "queue_position"])
    runs = Run.objects.bulk_create([Run(project=p, iteration=2, tokens_prompt=100)
                                    for p in projects])
    Iteration.objects.bulk_create([Iteration(run=r, number=n, pass_rate=0.5 * n, files={})
                                   for r in runs for n in (1, 2)])
    for run in runs[::10]:
        approval_for(run)


def board_queries(portal: Portal) -> tuple[int, str]:
    client = portal.client(portal.reviewer)
    client.get(board_url())  # warm the session and caches
    with CaptureQueriesContext(connection) as queries:
        response = client.get(board_url())
    assert response.status_code == 200
    return len(queries), response.content.decode()


def test_board_needs_the_same_number_of_queries_for_10_and_500_projects(portal: Portal) -> None:
    fill(portal, 10)
    small, small_html = board_queries(portal)
    fill(portal, 490)
    large, large_html = board_queries(portal)
    assert small == large, f"{small} queries for 10 projects, {large} for 500"
    assert large <= 12
    assert large_html.count('class="board-card') > small_html.count('class="board-card') >= 10


def test_interviewing_card_links_to_its_interview(portal: Portal) -> None:
    from projects.models import Interview

    project = ProjectFactory(team=portal.team, name="half-asked", status=S.INTERVIEWING,
                             requester=portal.requester)
    interview = Interview.objects.create(team=portal.team, requester=portal.requester,
                                         project=project, request="I need a thing.")
    html = portal.client(portal.reviewer).get(board_url()).content.decode()
    assert reverse("interview_detail", args=[interview.pk]) in column_html(html, "interviewing")
