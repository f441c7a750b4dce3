"""Input Python's json reads but the tools cannot use (NaN, a number too large, a NUL, a lone
surrogate, nesting 50,000 deep) is refused with the reason at every door: the HTTP API (400),
the form's JSON box and files (a form error), a schedule's input (the page says why). None of
them answers 500 or leaves anything behind."""

from __future__ import annotations

import io
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from tests.tools.conftest import client_for
from tools.json_input import JsonInputError, json_input_parse, json_input_problem
from tools.models import Activation, Invocation, Schedule
from tools.services.schedules import ScheduleError, schedule_create
from tools.services.tokens import tool_token_create

DEEP = b"[" * 50_000 + b"]" * 50_000
# Each is JSON text as a client sends it: the escapes are in the text, not Python's.
MALFORMED = {
    "nan": (b'{"rows": [{"month": "Jan", "amount": NaN}]}', "NaN"),
    "infinity": (b'{"rows": [{"month": "Jan", "amount": -Infinity}]}', "Infinity"),
    "huge number": (b'{"rows": [{"month": "Jan", "amount": 1e400}]}', "too large"),
    "nul": (b'{"rows": [{"month": "Jan\\u0000", "amount": 1}]}', "NUL"),
    "nul in a name": (b'{"rows": [{"mon\\u0000th": "Jan", "amount": 1}]}', "NUL"),
    "lone surrogate": (b'{"rows": [{"month": "\\ud800", "amount": 1}]}', "lone surrogate"),
    "deep": (b'{"rows": ' + DEEP + b"}", "nested too deeply"),
}


def api_call(raw: str, body: bytes, command: str = "totals") -> Any:
    return Client().post(reverse("tools:api", args=["acme", "month-totals", command]), body,
                         content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {raw}")


@pytest.fixture
def token(active: Activation, world: dict[str, Any]) -> str:
    return tool_token_create(team=world["acme"], plugin=active.plugin, user=world["admin"],
                             name="accounting")[1]


@pytest.mark.parametrize("case", list(MALFORMED))
def test_parse_refuses_what_json_accepts_but_the_tools_cannot_use(case: str) -> None:
    body, words = MALFORMED[case]
    with pytest.raises(JsonInputError, match=words) as caught:
        json_input_parse(body)
    assert not caught.value.syntax
    assert json_input_parse(b'{"rows": [{"month": "J\\u00e4n \\ud83d\\ude00", "amount": 1.5}]}'
                            ) == {"rows": [{"month": "Jän 😀", "amount": 1.5}]}


def test_the_problem_says_where_it_is() -> None:
    assert json_input_problem({"rows": [{"month": "ok"}, {"month": "a\x00"}]}) == (
        "Text in the input holds the NUL character (\\u0000), which cannot be stored "
        "(at rows[1].month).")
    assert json_input_problem({"a": float("nan")}) is not None
    nested: Any = 1
    for _ in range(100):
        nested = [nested]
    assert json_input_problem(nested) is None  # 100 levels: allowed
    assert "nested too deeply" in (json_input_problem([nested]) or "")


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("case", list(MALFORMED))
def test_the_api_answers_400_with_the_reason(token: str, case: str) -> None:
    body, words = MALFORMED[case]
    response = api_call(token, body)
    assert response.status_code == 400, response.content[:500]
    answer = response.json()
    assert answer["ok"] is False and words in answer["error"]
    assert not Invocation.objects.filter(caller="token").exists()


@pytest.mark.django_db(transaction=True)
def test_the_api_still_says_not_json_for_text_that_is_not_json(token: str) -> None:
    response = api_call(token, b'{"rows": [')
    assert response.status_code == 400 and "The body is not JSON" in response.json()["error"]
    assert api_call(token, b'{"rows": [{"month": "J\\u00e4n", "amount": 1}]}').status_code == 200


@pytest.mark.django_db
@pytest.mark.parametrize("case", ["nan", "nul", "lone surrogate", "deep"])
def test_the_forms_json_box_gives_a_form_error(active: Activation, world: dict[str, Any],
                                               case: str) -> None:
    # "count" has neither example nor schema: its form is one box for the whole JSON input.
    body, words = MALFORMED[case]
    response = client_for(world["requester"]).post(
        reverse("tools:run", args=["acme", "month-totals", "count"]),
        {"count-input": body.decode()})
    assert response.status_code == 400
    assert words in response.content.decode()
    assert not Invocation.objects.filter(caller="user").exists()


@pytest.mark.django_db
def test_a_json_file_or_a_table_with_a_nul_gives_a_form_error(active: Activation,
                                                              world: dict[str, Any]) -> None:
    client = client_for(world["requester"])
    for name, content in (("rows.json", b'[{"month": "Jan\\u0000", "amount": 1}]'),
                          ("rows.csv", b"month,amount\nJan\x00,1\n")):
        upload = io.BytesIO(content)
        upload.name = name
        response = client.post(reverse("tools:run", args=["acme", "month-totals", "totals"]),
                               {"totals-rows__file": upload})
        assert response.status_code == 400, name
        assert "NUL" in response.content.decode(), name
    assert not Invocation.objects.filter(caller="user").exists()


@pytest.mark.django_db
@pytest.mark.parametrize("case", ["nul", "nan", "lone surrogate", "deep"])
def test_a_schedules_input_is_refused_with_the_reason(active: Activation, world: dict[str, Any],
                                                      case: str) -> None:
    body, words = MALFORMED[case]
    client = client_for(world["admin"])
    response = client.post(reverse("tools:schedules", args=["acme", "month-totals"]),
                           {"name": "Nightly", "command": "totals", "payload": body.decode(),
                            "every": "hours", "interval": "1"})
    assert response.status_code == 400  # the form again, as it was typed, with the reason
    assert words in response.content.decode()
    assert not Schedule.objects.exists()


@pytest.mark.django_db
def test_the_schedule_service_refuses_a_nul_whoever_calls_it(active: Activation,
                                                             world: dict[str, Any]) -> None:
    with pytest.raises(ScheduleError, match="NUL"):
        schedule_create(activation=active, user=world["admin"], name="x", command="totals",
                        payload={"rows": [{"month": "\x00", "amount": 1}]}, when="every 1 hour")
    assert not Schedule.objects.exists()
