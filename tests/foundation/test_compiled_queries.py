"""The Reviews count is compiled once per user and membership shape (autocoder/compiled_queries.py)
and still follows every change of data and of the rules' inputs at once."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.core.exceptions import EmptyResultSet
from django.db import connection
from django.test.utils import CaptureQueriesContext

from autocoder import compiled_queries
from projects.models import Membership, Project, Run
from projects.selectors.approvals import _inbox_rows, inbox_count, membership_shape
from tests.projects.conftest import Portal, portal  # noqa: F401  (fixture)
from tests.projects.portal_factories import ProjectFactory, approval_for, run_with_history

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
