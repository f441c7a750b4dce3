"""Suggestions from use (tools/services/suggestions.py): a tool whose calls keep failing is told
to the team that uses it, grouped by error, with a link that asks for a change with a failing
call attached; a few failures among many calls say nothing; a team hears of its own calls only.
The calls are real (the bwrap sandbox) or, for the counting rules, rows of the real log."""

from __future__ import annotations

from typing import Any

import pytest

from teams.models import Notification
from tests.tools.conftest import client_for
from tools.models import Activation, Invocation
from tools.services.activations import activation_decide, activation_request
from tools.services.invocations import invocation_call
from tools.services.suggestions import failing_tools_tell

pytestmark = pytest.mark.django_db


def call(activation: Activation, rows: list[dict[str, Any]]) -> Invocation:
    return invocation_call(activation=activation, token_id=None, command="totals",
                           payload={"rows": rows}, user_id=activation.decided_by_id)


def test_a_tool_that_keeps_failing_is_told_with_a_link_that_asks_for_a_change(
        active: Activation, world: dict[str, Any]) -> None:
    for rows in ([{"month": "Jan", "amount": 2}], [{"month": "Feb", "amount": 3}]):
        assert call(active, rows).status == "ok"
    for month in ("Mar", "Apr", "May"):  # a row without its amount: the plugin breaks
        failed = call(active, [{"month": month}])
        assert failed.status == "failed" and "KeyError" in failed.error
    assert failing_tools_tell(force=True) == [world["acme"].pk]
    told = Notification.objects.filter(kind=Notification.Kind.TOOL_FAILING)
    assert sorted(n.user.username for n in told) == ["acme-admin", "acme-reviewer"]
    message = told[0].message
    assert message.startswith("month-totals 1.0.0 keeps failing: 3 of 5 calls in the last day.")
    assert "KeyError" in message and "(3 different calls)" in message
    page = client_for(world["admin"]).get(told[0].url)
    assert page.status_code == 200
    assert "KeyError" in page.content.decode()  # the latest failing call is attached
    assert failing_tools_tell(force=True) == []  # not told again within the quiet days


def log(activation: Activation, status: str, payload: dict[str, Any], error: str = "",
        team: Any = None) -> None:
    Invocation.objects.create(team=team or activation.team, plugin=activation.plugin,
                              version=activation.version, command="totals",
                              caller=Invocation.Caller.USER, status=status, payload=payload,
                              error=error, error_kind="plugin_error" if error else "")


def test_a_few_failures_among_many_calls_say_nothing(active: Activation) -> None:
    for n in range(9):
        log(active, "ok", {"n": n})
    log(active, "failed", {"n": 9}, "The plugin reported an error: KeyError: 'amount'")
    log(active, "refused", {"n": 10}, "refused")  # not the plugin's doing: never counted
    assert failing_tools_tell(force=True) == []


def test_a_team_hears_of_its_own_calls_only(active: Activation, world: dict[str, Any]) -> None:
    asked = activation_request(team=world["other"], version=active.version,
                               user=world["other_admin"])
    theirs = activation_decide(activation=asked, user=world["other_admin"], approve=True)
    for n in range(3):  # one error for three different inputs of team other
        log(theirs, "failed", {"secret-of-other": n},
            "The plugin reported an error: KeyError: 'amount'")
    assert failing_tools_tell(force=True) == [world["other"].pk]
    [told] = Notification.objects.filter(kind=Notification.Kind.TOOL_FAILING)
    assert told.user == world["other_admin"] and told.team == world["other"]
    assert "team=other" in told.url
