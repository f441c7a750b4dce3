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
