"""Webhook triggers (docs/tools.md, "Triggers"): for each way a sender signs (GitHub, Slack,
Stripe, plain) a right signature runs the command, a wrong or missing one is 401, a replay is
refused, an oversized body is 413 and a body that is not JSON 400; a paused trigger runs
nothing; a refusal of the one road every call takes is recorded on the delivery; the secret
stays out of pages, logs, answers and /metrics.

Real PostgreSQL, Redis, an in-process Dramatiq worker and the sandbox. The signatures are made
here with hmac, as each sender documents them, not with the portal's code.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import time
from datetime import timedelta
from typing import Any
from urllib.parse import urlencode

import dramatiq
import pytest
from django.test import Client, override_settings
from django.urls import reverse
from django.utils import timezone

from teams.models import AuditEntry
from tests.live import wait_for
from tests.tools.conftest import PLUGIN_PY, PLUGIN_TOML, client_for, publish_version
from tools.models import Activation, Delivery, Invocation, Trigger
from tools.services.activations import activation_decide, activation_request
from tools.services.blocks import version_block
from tools.services.invocations import invocation_perform
from tools.services.triggers import (
    TriggerError,
    trigger_create,
    trigger_pause,
    trigger_secret_set,
)

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = "whsec_test-secret-for-triggers-0123456789"
ECHO_TOML = PLUGIN_TOML + '''
[[commands]]
name = "echo"
description = "Answers with its input."
'''
ECHO_PY = PLUGIN_PY.replace('        raise ValueError(f"unknown command',
                            '        if name == "echo":\n            return payload\n'
                            '        raise ValueError(f"unknown command')
SCHEMES = ("github", "slack", "stripe", "plain")
EVENT = {"id": "evt_1", "event_id": "Ev1", "action": "opened", "number": 7}


@pytest.fixture
def echo(world: dict[str, Any]) -> Activation:
    version = publish_version(world["acme"], toml=ECHO_TOML, body=ECHO_PY)
    asked = activation_request(team=world["acme"], version=version, user=world["admin"])
    return activation_decide(activation=asked, user=world["admin"], approve=True)


def make(activation: Activation, user: Any, scheme: str, **extra: Any) -> Trigger:
    trigger, _ = trigger_create(activation=activation, user=user, command="echo",
                                scheme=scheme, secret=SECRET,
                                fixed=extra.pop("fixed", {"source": "test"}), **extra)
    return trigger


def sign(hex_of: bytes, secret: str = SECRET) -> str:
    return hmac.new(secret.encode(), hex_of, hashlib.sha256).hexdigest()


def headers_for(scheme: str, body: bytes, *, secret: str = SECRET, delivery: str = "d-1",
                at: int | None = None) -> dict[str, str]:
    """The headers each sender puts on a delivery."""
    stamp = str(int(time.time()) if at is None else at)
    if scheme == "github":
        return {"X-Hub-Signature-256": "sha256=" + sign(body, secret),
                "X-GitHub-Delivery": delivery, "X-GitHub-Event": "issues"}
    if scheme == "slack":
        return {"X-Slack-Signature": "v0=" + sign(b"v0:" + stamp.encode() + b":" + body,
                                                       secret),
                "X-Slack-Request-Timestamp": stamp}
    if scheme == "stripe":
        return {"Stripe-Signature": f"t={stamp},v1="
                + sign(stamp.encode() + b"." + body, secret)}
    return {"X-Signature-256": "sha256=" + sign(stamp.encode() + b"." + body, secret),
            "X-Signature-Timestamp": stamp, "X-Delivery-Id": delivery}


def calls() -> Any:
    """The calls triggers started (activating the tool also delivers events to it)."""
    return Invocation.objects.filter(caller=Invocation.Caller.TRIGGER)


def post(trigger: Trigger, body: bytes, headers: dict[str, str],
         content_type: str = "application/json") -> Any:
    return Client().post(reverse("tools:hook", args=[trigger.public_id]), data=body,
                         content_type=content_type, headers=headers)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_a_signed_delivery_runs_the_command_on_the_worker(
        echo: Activation, world: dict[str, Any], worker: dramatiq.Worker, scheme: str) -> None:
    trigger = make(echo, world["admin"], scheme)
    body = json.dumps(EVENT).encode()
    answer = post(trigger, body, headers_for(scheme, body))
    assert answer.status_code == (200 if scheme == "slack" else 202), answer.content
    said = answer.json()
    assert said["ok"] is True and said["status"] == "queued"
    delivery = Delivery.objects.get(pk=said["delivery"])
    assert delivery.outcome == "started" and delivery.invocation_id == said["invocation"]
    assert delivery.delivery_id == {"github": "d-1", "slack": "Ev1", "stripe": "evt_1",
                                    "plain": "d-1"}[scheme]

    def finished() -> Invocation | None:
        call = Invocation.objects.get(pk=said["invocation"])
        return call if call.status not in ("pending", "running") else None

    call = wait_for(finished, 240, "the worker did not run the trigger's call")
    assert call.status == "ok", call.error
    assert call.caller == Invocation.Caller.TRIGGER and call.command == "echo"
    assert call.output == {"source": "test", "event": EVENT}
    assert call.payload == {}  # what went in is not kept (the API's rule for systems)
    page = client_for(world["requester"]).get(reverse("tools:detail",
                                                      args=["acme", "month-totals"]))
    html = page.content.decode()
    assert trigger.name in html and "Started the command" in html and "succeeded" in html
    log = client_for(world["admin"]).get(reverse("tools:log", args=["acme", "month-totals"]))
    assert "a webhook trigger" in log.content.decode()


@pytest.mark.parametrize("scheme", SCHEMES)
def test_a_wrong_or_missing_signature_is_401_and_runs_nothing(
        echo: Activation, world: dict[str, Any], scheme: str) -> None:
    trigger = make(echo, world["admin"], scheme)
    body = json.dumps(EVENT).encode()
    wrong = post(trigger, body, headers_for(scheme, body, secret="another-secret-of-16+"))
    assert wrong.status_code == 401
    assert "does not match" in wrong.json()["error"]
    changed = post(trigger, body.replace(b"opened", b"closed"), headers_for(scheme, body))
    assert changed.status_code == 401
    missing = post(trigger, body, {})
    assert missing.status_code == 401 and "not signed" in missing.json()["error"]
    assert not calls().exists() and not Delivery.objects.exists()
    trigger.refresh_from_db()
    assert trigger.refused_count == 3 and "not signed" in trigger.last_refused_reason


@pytest.mark.parametrize("scheme", SCHEMES)
def test_a_replayed_delivery_is_refused(echo: Activation, world: dict[str, Any],
                                        scheme: str) -> None:
    trigger = make(echo, world["admin"], scheme)
    body = json.dumps(EVENT).encode()
    first = post(trigger, body, headers_for(scheme, body))
    assert first.status_code in (200, 202)
    again = post(trigger, body, headers_for(scheme, body))  # the same delivery id
    assert again.status_code == 409, again.content
    assert "received before" in again.json()["error"]
    assert calls().count() == 1
    if scheme != "github":  # GitHub signs no time: its delivery id alone catches a replay
        old = post(trigger, body, headers_for(scheme, body, delivery="d-2",
                                              at=int(time.time()) - 360))
        assert old.status_code == 401 and "5 minutes" in old.json()["error"]
        soon = post(trigger, body, headers_for(scheme, body, delivery="d-3",
                                               at=int(time.time()) + 360))
        assert soon.status_code == 401
    assert calls().count() == 1


@pytest.mark.parametrize("scheme", SCHEMES)
def test_an_oversized_body_is_413_and_a_body_not_json_400(
        echo: Activation, world: dict[str, Any], scheme: str) -> None:
    trigger = make(echo, world["admin"], scheme)
    big = b'{"x": "' + b"a" * (1024 * 1024 + 10) + b'"}'
    large = post(trigger, big, headers_for(scheme, big))
    assert large.status_code == 413 and "larger than 1024 KB" in large.json()["error"]
    text = b"this is not json"
    plain = post(trigger, text, headers_for(scheme, text), content_type="text/plain")
    assert plain.status_code == 400, plain.content
    assert "not JSON" in plain.json()["error"]
    assert not calls().exists()
    assert list(Delivery.objects.values_list("status", "outcome")) == [(400, "refused")]


def test_slack_checks_the_address_and_a_slash_command_is_a_form(
        echo: Activation, world: dict[str, Any]) -> None:
    trigger = make(echo, world["admin"], "slack")
    challenge = json.dumps({"type": "url_verification", "challenge": "3eZbrw1aB"}).encode()
    answer = post(trigger, challenge, headers_for("slack", challenge))
    assert answer.status_code == 200 and answer.json() == {"challenge": "3eZbrw1aB"}
    assert not calls().exists()
    form = urlencode({"command": "/totals", "text": "march", "user_name": "ada",
                      "trigger_id": "13345224609.738474920.8088930838d88f008e0"}).encode()
    slash = post(trigger, form, headers_for("slack", form),
                 content_type="application/x-www-form-urlencoded")
    assert slash.status_code == 200, slash.content
    assert "Started echo of month-totals" in slash.json()["text"]
    call = invocation_perform(invocation_id=slash.json()["invocation"])
    assert call is not None and call.output == {"source": "test", "event": {
        "command": "/totals", "text": "march", "user_name": "ada",
        "trigger_id": "13345224609.738474920.8088930838d88f008e0"}}


def test_a_paused_trigger_answers_so_and_runs_nothing_until_resumed(
        echo: Activation, world: dict[str, Any]) -> None:
    trigger = make(echo, world["admin"], "github")
    assert trigger_pause(team=world["acme"], plugin=echo.plugin, user=world["admin"],
                         trigger_id=trigger.pk)
    body = json.dumps(EVENT).encode()
    paused = post(trigger, body, headers_for("github", body))
    assert paused.status_code == 409 and "paused" in paused.json()["error"]
    assert not calls().exists()
    trigger_pause(team=world["acme"], plugin=echo.plugin, user=world["admin"],
                  trigger_id=trigger.pk, paused=False)
    again = post(trigger, body, headers_for("github", body))  # the sender's retry, same id
    assert again.status_code == 202
    actions = list(AuditEntry.objects.filter(action__startswith="tool.trigger")
                   .values_list("action", flat=True))
    assert sorted(actions) == ["tool.trigger_created", "tool.trigger_paused",
                               "tool.trigger_resumed"]


def test_a_call_the_road_refuses_is_recorded_on_the_delivery(
        echo: Activation, world: dict[str, Any]) -> None:
    trigger = make(echo, world["admin"], "plain")
    version_block(version=echo.version, user=world["staff"], reason="It leaks data.")
    body = json.dumps(EVENT).encode()
    answer = post(trigger, body, headers_for("plain", body))
    assert answer.status_code == 403 and "disabled this version" in answer.json()["error"]
    delivery = Delivery.objects.get()
    assert (delivery.outcome, delivery.status, delivery.invocation) == ("refused", 403, None)
    assert "disabled this version" in delivery.reason
    assert not calls().exists()


def test_only_a_team_admin_sets_one_up(echo: Activation, world: dict[str, Any]) -> None:
    with pytest.raises(TriggerError, match="admin"):
        make(echo, world["reviewer"], "github")
    page = client_for(world["reviewer"]).get(reverse("tools:triggers",
                                                     args=["acme", "month-totals"]))
    assert page.status_code == 403
    outsider = client_for(world["other_admin"]).get(reverse("tools:triggers",
                                                            args=["acme", "month-totals"]))
    assert outsider.status_code == 404
    assert not Trigger.objects.exists()


def test_the_secret_is_shown_once_and_never_again(echo: Activation, world: dict[str, Any],
                                                  caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    admin = client_for(world["admin"])
    url = reverse("tools:triggers", args=["acme", "month-totals"])
    made = admin.post(url, {"name": "Issues", "command": "echo", "scheme": "github",
                            "event_field": "issue", "fixed": '{"source": "gh"}'})
    assert made.status_code == 200, made.content.decode()[-2000:]
    html = made.content.decode()
    trigger = Trigger.objects.get()
    secret = made.context["made"]["secret"]
    assert secret.startswith("whsec_") and secret in html
    assert f"/hooks/{trigger.public_id}/" in html and "Copy the secret" in html
    assert secret not in trigger.secret and trigger.secret.startswith("sealed:v1:")
    body = json.dumps(EVENT).encode()
    assert post(trigger, body, headers_for("github", body, secret=secret)).status_code == 202
    answers = [post(trigger, body, headers_for("github", body, secret=secret)).content.decode(),
               post(trigger, body, headers_for("github", body)).content.decode(),
               post(trigger, b"no", headers_for("github", b"no", secret=secret,
                                                delivery="d-9")).content.decode()]
    pages = [admin.get(url).content.decode(),
             admin.get(reverse("tools:detail", args=["acme", "month-totals"])).content.decode(),
             admin.get(reverse("tools:log", args=["acme", "month-totals"])).content.decode(),
             admin.get(reverse("audit_log", args=["acme"])).content.decode()]
    with override_settings(METRICS_TOKEN="scrape-token"):
        metrics = Client().get("/metrics", HTTP_AUTHORIZATION="Bearer scrape-token")
    assert metrics.status_code == 200
    assert "Issues" in pages[0] and "set up and approved the trigger" in pages[3]
    for text in [*answers, *pages, metrics.content.decode(), caplog.text]:
        assert secret not in text
    assert secret not in json.dumps(list(AuditEntry.objects.values()), default=str)
    # A new one replaces it, shown once; the old one stops working.
    renewed = admin.post(url, {"secret_for": str(trigger.pk), "new_secret": ""})
    fresh = renewed.context["made"]["secret"]
    assert fresh != secret and fresh in renewed.content.decode()
    assert post(trigger, body, headers_for("github", body, secret=secret,
                                           delivery="d-10")).status_code == 401


def test_past_the_rate_limit_a_sender_is_told_when_to_send_again(
        echo: Activation, world: dict[str, Any], clean_redis: Any) -> None:
    trigger = make(echo, world["admin"], "github")
    body = json.dumps(EVENT).encode()
    with override_settings(TOOLS_TRIGGER_PER_MINUTE=2):
        answers = [post(trigger, body, headers_for("github", body, delivery=f"d-{n}"))
                   for n in range(3)]
    assert [answer.status_code for answer in answers] == [202, 202, 429]
    assert 1 <= int(answers[2]["Retry-After"]) <= 60
    assert "More than 2 deliveries a minute" in answers[2].json()["error"]
    assert calls().count() == 2
    unsigned = post(trigger, body, {})  # not counted as a delivery: still a plain 401
    assert unsigned.status_code == 401


def test_a_slack_or_stripe_secret_is_the_senders(echo: Activation,
                                                 world: dict[str, Any]) -> None:
    trigger, shown = trigger_create(activation=echo, user=world["admin"], command="echo",
                                    scheme="stripe")
    assert shown == "" and trigger.secret == ""
    body = json.dumps(EVENT).encode()
    waiting = post(trigger, body, headers_for("stripe", body))
    assert waiting.status_code == 401 and "no signing secret yet" in waiting.json()["error"]
    with pytest.raises(TriggerError, match="Stripe makes the signing secret"):
        trigger_secret_set(team=world["acme"], plugin=echo.plugin, user=world["admin"],
                           trigger_id=trigger.pk)
    assert trigger_secret_set(team=world["acme"], plugin=echo.plugin, user=world["admin"],
                              trigger_id=trigger.pk, secret=SECRET) == ""
    assert post(trigger, body, headers_for("stripe", body)).status_code == 202
    with pytest.raises(TriggerError, match="at least 16 characters"):
        trigger_create(activation=echo, user=world["admin"], command="echo", scheme="plain",
                       secret="short")


def test_githubs_form_setting_is_read_too(echo: Activation, world: dict[str, Any]) -> None:
    trigger = make(echo, world["admin"], "github")
    form = urlencode({"payload": json.dumps({"action": "opened"})}).encode()
    answer = post(trigger, form, headers_for("github", form),
                  content_type="application/x-www-form-urlencoded")
    assert answer.status_code == 202, answer.content
    call = invocation_perform(invocation_id=answer.json()["invocation"])
    assert call is not None and call.output == {"source": "test", "event": {"action": "opened"}}
    empty = urlencode({"other": "x"}).encode()
    refused = post(trigger, empty, headers_for("github", empty, delivery="d-2"),
                   content_type="application/x-www-form-urlencoded")
    assert refused.status_code == 400 and "payload=<JSON>" in refused.json()["error"]


def test_the_page_says_what_to_correct_and_saves_nothing(echo: Activation,
                                                        world: dict[str, Any]) -> None:
    admin = client_for(world["admin"])
    url = reverse("tools:triggers", args=["acme", "month-totals"])
    for data, said in (({"fixed": "[1]"}, "Write an object"),
                       ({"fixed": '{"event": 1}'}, "also name “event”"),
                       ({"event_field": "the event"}, "letters, digits and _"),
                       ({"command": "greet"}, "With the event as “event”"),
                       ({"secret": "short"}, "at least 16 characters")):
        page = admin.post(url, {"name": "Orders", "command": "echo", "scheme": "plain",
                                "event_field": "event", "fixed": "{}", **data})
        assert page.status_code == 400, data
        assert said in page.content.decode(), (data, page.content.decode()[-3000:])
        assert 'value="Orders"' in page.content.decode()  # what was typed stays
    assert not Trigger.objects.exists()


def test_deliveries_are_kept_as_long_as_the_log(echo: Activation, world: dict[str, Any],
                                                settings: Any) -> None:
    trigger = make(echo, world["admin"], "github")
    old = Delivery.objects.create(trigger=trigger, outcome="refused", status=400, reason="x")
    Delivery.objects.filter(pk=old.pk).update(
        received_at=timezone.now() - timedelta(days=settings.TOOLS_LOG_RETENTION_DAYS + 1))
    body = json.dumps(EVENT).encode()
    assert post(trigger, body, headers_for("github", body)).status_code == 202
    assert not Delivery.objects.filter(pk=old.pk).exists()
    assert Delivery.objects.filter(trigger=trigger).count() == 1
