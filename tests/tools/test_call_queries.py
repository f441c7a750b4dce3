"""What a call asks of the database: an API call or an assistant's MCP call reads its token and
the tool (with the team's settings of it) in one query each and writes the log's row once,
when it ends (docs/tools.md,
"Throughput"). A field read that the call's selector left out (`tools.selectors.FOR_CALLS`)
would show here as one query more."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from tools.mcp.catalogue import Grant
from tools.mcp.server import _call
from tools.models import Activation, Invocation, ToolStorage
from tools.services.blocks import version_block
from tools.services.tokens import tool_token_create

pytestmark = pytest.mark.django_db(transaction=True)

ROWS = {"rows": [{"month": "Jan", "amount": 2}, {"month": "Jan", "amount": 3}]}


def _post(raw: str) -> Any:
    return Client().post(reverse("tools:api", args=["acme", "month-totals", "totals"]),
                         json.dumps(ROWS), content_type="application/json",
                         HTTP_AUTHORIZATION=f"Bearer {raw}")


def _statements(captured: CaptureQueriesContext) -> list[str]:
    return [query["sql"].split()[0] for query in captured.captured_queries]


def _said(captured: CaptureQueriesContext) -> str:
    return "\n".join(query["sql"][:150] for query in captured.captured_queries)


@pytest.fixture
def raw(active: Activation, world: dict[str, Any]) -> str:
    return tool_token_create(team=world["acme"], plugin=active.plugin, user=world["admin"],
                             name="books")[1]


def test_an_api_call_reads_its_token_and_tool_and_writes_its_log_row_once(raw: str) -> None:
    assert _post(raw).status_code == 200  # the first call also notes when the token was used
    with CaptureQueriesContext(connection) as captured:
        response = _post(raw)
    assert response.status_code == 200, response.content
    assert response.json()["output"] == {"totals": [{"month": "Jan", "total": 5}]}
    # the token, the tool with its settings (month-totals declares some), the log's row
    assert _statements(captured) == ["SELECT", "SELECT", "INSERT"], _said(captured)
    logged = Invocation.objects.get(pk=response.json()["invocation"])
    assert logged.status == "ok" and logged.caller == "token"
    # dated when it was asked for, written when it ended
    assert logged.created_at <= logged.finished_at


def test_what_the_one_read_brings_is_current(raw: str, active: Activation,
                                             world: dict[str, Any]) -> None:
    """The storage and the kill switch come with the tool's row, as they are at the call."""
    ToolStorage.objects.create(team=world["acme"], plugin=active.plugin, data={"seen": 1},
                               size=10)
    from tools.selectors import tool_for_call

    found = tool_for_call(world["acme"].pk, plugin_name="month-totals")
    assert found is not None and found.stored == {"seen": 1} and found.blocked is False
    version_block(version=active.version, user=world["staff"], reason="leaks data")
    response = _post(raw)
    assert response.status_code == 403 and "disabled" in response.json()["error"]
    assert not Invocation.objects.filter(status="ok").exists()


def test_an_mcp_call_reads_the_tool_once_and_writes_once(active: Activation,
                                                         world: dict[str, Any]) -> None:
    token, _ = tool_token_create(team=world["acme"], plugin=None,  # type: ignore[arg-type]
                                 user=world["admin"], name="assistant")
    grant = Grant(token_id=token.pk, team_id=world["acme"].pk, team_slug="acme",
                  plugin_id=None, base_url="http://testserver")
    with CaptureQueriesContext(connection) as captured:
        result = _call(grant, "month-totals__totals", ROWS)
    assert not result.is_error, result.content
    assert result.structured_content == {"totals": [{"month": "Jan", "total": 5}]}
    # the tool with its settings, the log's row (the token was read with the HTTP request)
    assert _statements(captured) == ["SELECT", "INSERT"], _said(captured)
    assert Invocation.objects.filter(caller="mcp", status="ok").count() == 1


def test_the_compiled_reads_bring_what_the_orm_would(raw: str, active: Activation,
                                                     world: dict[str, Any]) -> None:
    """tool_for_call and token_by_raw run SQL compiled once per process (prepared on pooled
    connections): each call's own values take the compile's placeholders, so a second team,
    plugin or token gets its own row, and one that matches nothing gets None."""
    from tools.selectors import token_by_raw, tool_for_call

    by_name = tool_for_call(world["acme"], plugin_name="month-totals")
    by_id = tool_for_call(world["acme"].pk, plugin_id=active.plugin_id)
    for found in (by_name, by_id):
        assert found is not None and found.pk == active.pk
        assert (found.version.version, found.plugin.normalized_name, found.team.slug) == (
            active.version.version, "month-totals", "acme")
        assert found.version.commands == active.version.commands  # JSON, decoded
        assert found.blocked is False and found.stored is None
        assert found.entered_settings == []
    # the other team has not activated it; a plugin it does not have; a name nobody uses
    assert tool_for_call(world["other"], plugin_name="month-totals") is None
    assert tool_for_call(world["acme"], plugin_id=active.plugin_id + 1000) is None
    assert tool_for_call(world["acme"], plugin_name=" plugin name ") is None

    token = token_by_raw(raw)
    assert token is not None and token.team.slug == "acme"
    assert token.plugin is not None and token.plugin.normalized_name == "month-totals"
    team_wide, team_raw = tool_token_create(team=world["acme"], plugin=None,  # type: ignore[arg-type]
                                            user=world["admin"], name="all tools")
    found_wide = token_by_raw(team_raw)
    assert found_wide is not None and found_wide.pk == team_wide.pk
    assert found_wide.plugin is None  # the outer join found no plugin: None, not an empty one
    assert token_by_raw(raw + "x") is None and token_by_raw("") is None
    token.revoked_at = token.last_used_at or active.created_at
    token.save(update_fields=["revoked_at"])
    assert token_by_raw(raw) is None


def test_a_token_and_a_tool_of_another_team_are_read_as_theirs(world: dict[str, Any]) -> None:
    """The second team's rows through the same compiled statements (not the first's)."""
    from tests.tools.conftest import publish_version
    from tools.selectors import token_by_raw, tool_for_call
    from tools.services.activations import activation_decide, activation_request

    version = publish_version(world["acme"], visibility="public")
    for team, admin in ((world["acme"], world["admin"]), (world["other"], world["other_admin"])):
        activation_decide(activation=activation_request(team=team, version=version, user=admin),
                          user=admin, approve=True)
    for team, admin in ((world["acme"], world["admin"]), (world["other"], world["other_admin"])):
        _, team_raw = tool_token_create(team=team, plugin=None,  # type: ignore[arg-type]
                                        user=admin, name="t")
        token = token_by_raw(team_raw)
        found = tool_for_call(team.pk, plugin_name="month-totals")
        assert token is not None and token.team.slug == team.slug
        assert found is not None and found.team.slug == team.slug and found.team_id == team.pk
