"""The HTTP API and its tokens: the status codes an API user expects, tokens scoped to one
team's plugin, revoked at once, never stored in clear."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from tests.tools.conftest import client_for
from tools.models import Activation, Invocation, ToolToken
from tools.services.activations import activation_decide, activation_request
from tools.services.blocks import version_block
from tools.services.tokens import tool_token_create, tool_token_revoke

pytestmark = pytest.mark.django_db(transaction=True)


def call(raw: str, command: str = "totals", body: Any = None, *, team: str = "acme",
         plugin: str = "month-totals", data: bytes | None = None) -> Any:
    url = reverse("tools:api", args=[team, plugin, command])
    payload = data if data is not None else json.dumps(
        body if body is not None else {"rows": [{"month": "Jan", "amount": 2}]})
    headers = {"HTTP_AUTHORIZATION": f"Bearer {raw}"} if raw else {}
    return Client().post(url, payload, content_type="application/json", **headers)


@pytest.fixture
def token(active: Activation, world: dict[str, Any]) -> str:
    return tool_token_create(team=world["acme"], plugin=active.plugin, user=world["admin"],
                             name="accounting")[1]


def test_a_call_answers_the_output_and_is_logged(token: str) -> None:
    response = call(token)
    assert response.status_code == 200, response.content
    answer = response.json()
    assert answer["ok"] is True and answer["output"] == {"totals": [{"month": "Jan", "total": 2}]}
    logged = Invocation.objects.get(pk=answer["invocation"])
    assert logged.caller == "token" and logged.token.name == "accounting"
    assert logged.payload == {} and logged.output is None  # sizes only: the caller has the data
    assert logged.input_bytes > 0 and logged.output_bytes > 0
    assert answer["duration_ms"] == logged.duration_ms


def test_tokens_are_hashed_and_shown_once(token: str, world: dict[str, Any]) -> None:
    stored = ToolToken.objects.get()
    assert token not in (stored.token_hash, stored.prefix) and token.startswith(stored.prefix)
    page = client_for(world["admin"]).get(reverse("tools:tokens", args=[
        "acme", "month-totals"])).content.decode()
    assert token not in page and stored.prefix in page


def test_missing_invalid_and_revoked_tokens_get_401(token: str, active: Activation,
                                                    world: dict[str, Any]) -> None:
    assert call("").status_code == 401
    assert call("actl_not-a-token").status_code == 401
    tool_token_revoke(team=world["acme"], plugin=active.plugin, user=world["admin"],
                      token_id=ToolToken.objects.get().pk)
    revoked = call(token)
    assert revoked.status_code == 401 and "revoked" in revoked.json()["error"]


def test_a_token_of_team_a_cannot_call_team_bs_activation(active: Activation, token: str,
                                                          world: dict[str, Any]) -> None:
    asked = activation_request(team=world["other"], version=active.version,
                               user=world["other_admin"])
    activation_decide(activation=asked, user=world["other_admin"], approve=True)
    assert call(token, team="other").status_code == 404
    assert call(token, plugin="something-else").status_code == 404
    theirs = tool_token_create(team=world["other"], plugin=active.plugin,
                               user=world["other_admin"], name="theirs")[1]
    assert call(theirs, team="acme").status_code == 404
    assert call(theirs, team="other").status_code == 200


def test_bad_requests_get_400_with_the_reason(token: str) -> None:
    unknown = call(token, command="explode")
    assert unknown.status_code == 400 and "Unknown command 'explode'" in unknown.json()["error"]
    assert call(token, data=b"[1, 2]").status_code == 400
    assert call(token, data=b"not json").status_code == 400
    bad_field = call(token, command="greet", body={"name": 5})
    assert bad_field.status_code == 400 and "name: must be text" in bad_field.json()["error"]
    extra = call(token, command="greet", body={"name": "Ada", "colour": "red"})
    assert extra.status_code == 400 and "colour" in extra.json()["error"]


def test_an_oversize_payload_gets_413(token: str) -> None:
    huge = call(token, body={"rows": [{"month": "x" * 1000, "amount": 1}] * 3000})
    assert huge.status_code == 413 and "limit" in huge.json()["error"]
    assert not Invocation.objects.filter(caller="token").exists()


def test_the_plugin_raising_gets_422_in_plain_words(token: str) -> None:
    failed = call(token, command="fail", body={})
    assert failed.status_code == 422
    assert "there is nothing to add up" in failed.json()["error"]
    assert failed.json()["kind"] == "plugin_error"


def test_a_disabled_version_is_refused_at_the_next_call(token: str, active: Activation,
                                                        world: dict[str, Any]) -> None:
    assert call(token).status_code == 200
    version_block(version=active.version, user=world["staff"], reason="found malicious")
    refused = call(token)
    assert refused.status_code == 403 and "disabled" in refused.json()["error"]


def test_a_retired_tool_is_not_found(token: str, active: Activation,
                                     world: dict[str, Any]) -> None:
    client_for(world["admin"]).post(reverse("tools:deactivate", args=["acme", "month-totals"]))
    assert call(token).status_code == 404


def test_the_tool_page_shows_a_curl_example_with_the_real_url(active: Activation,
                                                              world: dict[str, Any]) -> None:
    page = client_for(world["requester"]).get(reverse("tools:detail", args=[
        "acme", "month-totals"])).content.decode()
    assert "curl -X POST http://testserver/api/tools/acme/month-totals/totals" in page
    assert "Authorization: Bearer YOUR-TOKEN" in page
