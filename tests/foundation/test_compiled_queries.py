"""The Reviews count is compiled once per user and membership shape (autocoder/compiled_queries.py)
and still follows every change of data and of the rules' inputs at once."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.core.exceptions import EmptyResultSet
from django.db import connection
from django.test.utils import CaptureQueriesContext

from autocoder import compiled_queries
from projects.selectors.board import (
    CARD_FIELDS,
    BoardFilters,
    board_projects,
    card_rows,
    my_review_project_ids,
)
from projects.selectors.inbox import _inbox_rows, inbox_count, membership_shape
from runs.models import Project, Run
from teams.models import Membership
from tests.projects.portal_factories import ProjectFactory, approval_for, run_with_history
from tests.teams.conftest import Portal, portal  # noqa: F401  (fixture)

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fresh_memo() -> Iterator[None]:
    compiled_queries.forget_all()
    yield
    compiled_queries.forget_all()


def _memberships(user: object) -> list[Membership]:
    return list(Membership.objects.filter(user=user).select_related("team"))


def _waiting_gate(portal: Portal) -> None:  # noqa: F811
    project = ProjectFactory(team=portal.team, requester=portal.requester,
                             status=Project.Status.AWAITING_APPROVAL)
    approval_for(run_with_history(project=project, status=Run.Status.AWAITING_APPROVAL))


def test_the_memoised_query_is_the_one_the_orm_compiles_for_every_role(
        portal: Portal) -> None:  # noqa: F811
    _waiting_gate(portal)
    for user in (portal.admin, portal.reviewer, portal.requester, portal.outsider):
        memberships = _memberships(user)
        inbox_count(user, memberships)
        memo = compiled_queries.compiled_sql(("inbox", user.pk, membership_shape(memberships)),
                                             lambda: pytest.fail("compiled twice"))
        assert memo == _fresh_compile(user, memberships)


def _fresh_compile(user: object, memberships: list[Membership]
                   ) -> tuple[str, tuple[object, ...]] | None:
    try:
        sql, params = _inbox_rows(user, memberships).query.sql_with_params()  # type: ignore[arg-type]
    except EmptyResultSet:  # nothing the user may decide, whatever the data
        return None
    return sql, tuple(params)


def test_the_count_follows_new_data_without_compiling_again(portal: Portal) -> None:  # noqa: F811
    assert inbox_count(portal.reviewer, _memberships(portal.reviewer)) == 0
    _waiting_gate(portal)
    _waiting_gate(portal)
    with CaptureQueriesContext(connection) as queries:
        assert inbox_count(portal.reviewer, _memberships(portal.reviewer)) == 2
    assert len(queries) == 2  # the memberships and the count


def test_a_changed_role_or_team_rule_is_a_new_query(portal: Portal) -> None:  # noqa: F811
    _waiting_gate(portal)
    assert inbox_count(portal.reviewer) == 1
    Membership.objects.filter(user=portal.reviewer).update(role=Membership.Role.REQUESTER)
    assert inbox_count(portal.reviewer) == 0  # requesters may not decide in this team
    portal.team.requester_may_approve = True
    portal.team.save()
    assert inbox_count(portal.requester) == 1  # now the requester decides their own project


def test_a_user_without_teams_counts_nothing(portal: Portal) -> None:  # noqa: F811
    Membership.objects.filter(user=portal.outsider).delete()
    assert inbox_count(portal.outsider) == 0


# -- the board's cards ---------------------------------------------------------------------------


def _board_with_every_kind_of_card(portal: Portal) -> None:  # noqa: F811
    _waiting_gate(portal)  # a run, its iterations and a pending approval
    ProjectFactory(team=portal.team, requester=portal.requester, status=Project.Status.QUEUED,
                   queue_position=1)  # no run at all
    done = ProjectFactory(team=portal.team, requester=portal.colleague,
                          status=Project.Status.SUCCEEDED)
    run_with_history(project=done, status=Run.Status.SUCCEEDED)


def test_the_boards_memoised_rows_are_the_rows_the_orm_reads(portal: Portal) -> None:  # noqa: F811
    _board_with_every_kind_of_card(portal)
    membership = Membership.objects.get(user=portal.reviewer)
    my_review = my_review_project_ids(team=portal.team, membership=membership)

    memoised = card_rows(team=portal.team, filters=BoardFilters(), user_id=portal.reviewer.pk,
                         my_review=my_review)
    orm = list(board_projects(team=portal.team).order_by("-status_changed_at", "-id")
               .values(*CARD_FIELDS))

    assert memoised == orm and len(orm) == 3
    assert any(row["run"] and row["run"]["pass_rate"] is not None for row in memoised)
    assert my_review == {row["id"] for row in orm if row["pending_approval_id"]}


def test_the_board_shows_a_change_made_after_it_was_first_drawn(portal: Portal) -> None:  # noqa: F811
    client = portal.client(portal.reviewer)
    first = client.get("/t/acme/board/").content.decode()
    assert "late-arrival" not in first
    ProjectFactory(team=portal.team, requester=portal.requester, name="late-arrival",
                   status=Project.Status.QUEUED, queue_position=1)
    _waiting_gate(portal)

    second = client.get("/t/acme/board/").content.decode()

    assert "late-arrival" in second
    assert "Your review" in second or "your review" in second.lower()


def test_the_reviews_count_is_a_prepared_statement_with_one_generic_plan(
        portal: Portal) -> None:  # noqa: F811
    """PostgreSQL plans the count once per connection, not on every page (the pool keeps the
    connection, and with it the statement, between requests)."""
    assert compiled_queries.prepared_statements()
    _waiting_gate(portal)
    memberships = _memberships(portal.reviewer)
    counts = [inbox_count(portal.reviewer, memberships) for _ in range(3)]
    with connection.cursor() as cursor:
        cursor.execute("SELECT generic_plans, custom_plans FROM pg_prepared_statements"
                       " WHERE statement LIKE 'SELECT COUNT(*) FROM (%%'")
        plans = cursor.fetchall()
    assert counts == [1, 1, 1]
    assert plans == [(3, 0)]
