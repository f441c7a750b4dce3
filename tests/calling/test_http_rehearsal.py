"""A rehearsal's api.http (autocoder/calling/http_rehearsal.py): the gate's rules, but nothing
leaves the machine, not even a DNS lookup; each request is answered from the sample answers, and
a secret's place shows `[secret NAME]`. The tests fail any name lookup or connection."""

from __future__ import annotations

import base64
import json
import socket
from typing import Any

import pytest

from autocoder.calling.http_gate import HttpPolicy
from autocoder.calling.http_rehearsal import (
    HttpRehearsal,
    sample_answers,
    sample_settings,
    secret_placeholder,
)
from autocoder.plugins import parse_host_rule

ANSWERS = [
    {"method": "POST", "url": "https://hooks.chat.example/services/T1", "status": 200,
     "text": "ok"},
    {"method": "GET", "url": "https://bookings.example.org/hours?week=1", "status": 200,
     "json": {"hours": 12}},
    {"method": "GET", "url": "https://bookings.example.org/hours", "status": 200,
     "json": {"hours": 7}},
]


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a rehearsal reached for the network")

    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)


def rehearsal(answers: list[dict[str, Any]] = ANSWERS) -> HttpRehearsal:
    rules = (parse_host_rule("hooks.chat.example"), parse_host_rule("bookings.example.org"))
    secrets = {name: secret_placeholder(name) for name in ("api_key", "hook_path")}
    return HttpRehearsal(HttpPolicy(hosts=rules, internal_hosts=frozenset(), secrets=secrets),
                         answers=answers)


def body(answer: dict[str, Any]) -> Any:
    return base64.b64decode(answer["body_b64"]).decode()


def test_a_request_is_answered_from_its_sample_and_recorded_with_what_it_would_send() -> None:
    gate = rehearsal()
    answer = gate.perform({"method": "POST", "url": "https://hooks.chat.example/services/T1",
                           "json": {"text": "12 hours"}, "auth": {"secret": "api_key"}})
    assert answer["ok"] and answer["status"] == 200 and body(answer) == "ok"
    [record] = gate.records
    assert record["rehearsal"] is True and record["host"] == "hooks.chat.example"
    assert record["sent"]["headers"]["Authorization"] == "Bearer [secret api_key]"
    assert json.loads(record["sent"]["body"]) == {"text": "12 hours"}


def test_the_same_address_takes_an_unused_answer_first_then_repeats() -> None:
    gate = rehearsal()
    hours = [json.loads(body(gate.perform({"method": "GET",
                                           "url": "https://bookings.example.org/hours",
                                           "params": {"week": "2"}}))) for _ in range(3)]
    assert hours == [{"hours": 12}, {"hours": 7}, {"hours": 12}]


def test_a_secret_in_the_path_matches_by_host() -> None:
    gate = rehearsal()
    answer = gate.perform({"method": "POST",
                           "url": "https://hooks.chat.example/services/{hook_path}"})
    assert answer["ok"] and body(answer) == "ok"


def test_without_a_sample_it_says_so_and_an_undeclared_host_is_refused_as_by_the_gate() -> None:
    gate = rehearsal()
    missing = gate.perform({"method": "DELETE", "url": "https://bookings.example.org/hours"})
    assert not missing["ok"] and missing["error_kind"] == "no_answer"
    assert missing["error"].startswith("rehearsal: no sample answer for DELETE"
                                       " bookings.example.org/hours")
    elsewhere = gate.perform({"method": "GET", "url": "https://evil.example/"})
    assert not elsewhere["ok"] and "not one of the hosts this plugin declared" in \
        elsewhere["error"]
    assert [r.get("rehearsal", False) for r in gate.records] == [True, False]


def test_the_samples_come_from_the_examples_the_commands_own_first() -> None:
    commands = [{"name": "other", "examples": [{"http": [ANSWERS[0]], "settings": {
                    "week_start": "tue", "booking_address": "https://bookings.example"}}]},
                {"name": "hours", "examples": [
                    {"http": [ANSWERS[2]], "settings": {"week_start": "mon"}},
                    {"http": [ANSWERS[1]], "settings": {"week_start": "sun", "x": "y"}}]}]
    assert sample_answers(commands, "hours") == [ANSWERS[2], ANSWERS[1], ANSWERS[0]]
    # the command's own values first; another command's only for a name its own do not give
    assert sample_settings(commands, "hours") == {"week_start": "mon", "x": "y",
                                                  "booking_address": "https://bookings.example"}
    assert sample_answers([{"name": "hours"}], "hours") == []
