"""What a trigger does with a request another system sends to its address (docs/tools.md,
"Triggers"): check the signature (tools/triggers_signing.py), read the event, refuse a replay,
and queue the command on the one road every call takes (`invocation_check`, then
`invocation_queue` as `Caller.TRIGGER`), answering the sender at once.

A request whose signature fails is not a delivery: only the trigger's count, time and reason
of refusals move (an admin setting a sender up sees why). Every signed request is a
`Delivery`, with the status it was answered and the call it started. Signed deliveries are
limited to PER_MINUTE a trigger (a fixed one-minute window in Redis); past it the sender is
answered 429 with Retry-After, which GitHub, Slack and Stripe retry.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any
from urllib.parse import parse_qs

import redis
from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from autocoder.sealing import UnsealError, unseal
from tools import selectors
from tools.json_input import JsonInputError, json_input_parse
from tools.models import Delivery, Invocation, Trigger
from tools.services.invocations import (
    Caller,
    InvocationRefused,
    invocation_check,
    invocation_queue,
)
from tools.triggers_signing import GITHUB, SLACK, STRIPE, SignatureRefused, signature_verify

logger = logging.getLogger(__name__)

PER_MINUTE = 60
WINDOW_S = 60
PAUSED = "This trigger is paused by a team admin: nothing was run."
REPLAYED = "This delivery was received before and started the command then: not run again."
NOT_IN_USE = "The team no longer uses this tool, so nothing was run."
NOT_JSON = ("The body is not JSON. Send the event as a JSON object with Content-Type: "
            "application/json.")
UNSEALABLE = ("The trigger's secret cannot be read with this portal's SECRET_KEY: a team "
              "admin sets a new one on the tool's Triggers page. Nothing was run.")


@dataclass(frozen=True)
class Answer:
    """What the sender is answered: the HTTP status, the JSON body, and Retry-After."""

    status: int
    body: dict[str, object] = field(default_factory=dict)
    retry_after: int = 0


class _Unreadable(Exception):
    """A signed body the command cannot take as an event; `str()` says why."""


def delivery_receive(*, trigger: Trigger, headers: Mapping[str, str], body: bytes,
                     content_type: str, now: float | None = None) -> Answer:
    """Handle one request to `trigger`'s address (its body already within the size limit)."""
    now = time.time() if now is None else now
    try:
        secret = unseal(trigger.secret)
    except UnsealError:
        return _refused_unsigned(trigger, UNSEALABLE, status=401)
    try:
        signed = signature_verify(scheme=trigger.scheme, secret=secret, headers=headers,
                                  body=body, now=now)
    except SignatureRefused as exc:
        return _refused_unsigned(trigger, str(exc), status=401)
    wait = _rate_limit_hit(trigger)
    if wait:
        return Answer(429, {"ok": False, "error": f"More than {_per_minute()} deliveries a "
                                                  f"minute to this trigger: send it again in "
                                                  f"{wait} s."}, retry_after=wait)
    try:
        event = _event(trigger.scheme, content_type, body)
    except _Unreadable as exc:
        return _record(trigger, Delivery.Outcome.REFUSED, 400, str(exc), body,
                       signed.delivery_id)
    delivery_id = (signed.delivery_id or _id_in(trigger.scheme, event))[:200]
    if trigger.scheme == SLACK and isinstance(event, dict) \
            and event.get("type") == "url_verification":
        _record(trigger, Delivery.Outcome.CHECKED, 200, "", body, delivery_id)
        return Answer(200, {"challenge": str(event.get("challenge", ""))})
    if trigger.paused:
        return _record(trigger, Delivery.Outcome.PAUSED, 409, PAUSED, body, delivery_id)
    if delivery_id and Delivery.objects.filter(trigger=trigger, delivery_id=delivery_id,
                                               outcome=Delivery.Outcome.STARTED).exists():
        return _record(trigger, Delivery.Outcome.REFUSED, 409, REPLAYED, body, delivery_id)
    return _start(trigger, event, body, delivery_id)


def _start(trigger: Trigger, event: Any, body: bytes, delivery_id: str) -> Answer:
    activation = selectors.active_activation(trigger.team_id, trigger.plugin_id)
    if activation is None:
        return _record(trigger, Delivery.Outcome.REFUSED, 409, NOT_IN_USE, body, delivery_id)
    payload = {**trigger.fixed, trigger.event_field: event}
    try:
        invocation_check(activation=activation, command=trigger.command, payload=payload)
    except InvocationRefused as exc:
        return _record(trigger, Delivery.Outcome.REFUSED, exc.status, str(exc), body,
                       delivery_id)
    _old_forgotten(trigger)
    try:
        with transaction.atomic():
            invocation = invocation_queue(activation=activation, command=trigger.command,
                                          payload=payload,
                                          caller=Caller(Invocation.Caller.TRIGGER))
            delivery = Delivery.objects.create(
                trigger=trigger, delivery_id=delivery_id, outcome=Delivery.Outcome.STARTED,
                status=200 if trigger.scheme == SLACK else 202, body_bytes=len(body),
                invocation=invocation)
    except IntegrityError:  # the same delivery, sent twice at once: the other one started
        return _record(trigger, Delivery.Outcome.REFUSED, 409, REPLAYED, body, delivery_id)
    said = f"Started {trigger.command} of {trigger.plugin.name} (delivery {delivery.pk})."
    answer: dict[str, object] = {"ok": True, "delivery": delivery.pk, "delivery_id": delivery_id,
                              "invocation": invocation.pk, "status": "queued", "said": said}
    if trigger.scheme == SLACK:  # a slash command shows "text" to whoever typed it
        answer.update(response_type="ephemeral", text=said)
    return Answer(delivery.status, answer)


def _record(trigger: Trigger, outcome: str, status: int, reason: str, body: bytes,
            delivery_id: str) -> Answer:
    _old_forgotten(trigger)
    delivery = Delivery.objects.create(trigger=trigger, delivery_id=delivery_id,
                                       outcome=outcome, status=status, reason=reason[:500],
                                       body_bytes=len(body))
    logger.info("trigger %s: delivery %s answered %s (%s)", trigger.pk, delivery.pk, status,
                outcome)
    if status == 200:
        return Answer(status, {"ok": True, "delivery": delivery.pk})
    return Answer(status, {"ok": False, "error": reason, "delivery": delivery.pk,
                           "delivery_id": delivery_id})


def _old_forgotten(trigger: Trigger) -> None:
    """Deliveries are kept as long as the invocation log (TOOLS_LOG_RETENTION_DAYS): each new
    one deletes its trigger's older ones (an indexed delete, so nothing else has to sweep)."""
    cutoff = timezone.now() - timedelta(days=settings.TOOLS_LOG_RETENTION_DAYS)
    Delivery.objects.filter(trigger=trigger, received_at__lt=cutoff).delete()


def _refused_unsigned(trigger: Trigger, reason: str, *, status: int) -> Answer:
    Trigger.objects.filter(pk=trigger.pk).update(
        refused_count=F("refused_count") + 1, last_refused_at=timezone.now(),
        last_refused_reason=reason[:200])
    logger.info("trigger %s: a request was refused (%s)", trigger.pk, reason)
    return Answer(status, {"ok": False, "error": reason})


def _event(scheme: str, content_type: str, body: bytes) -> Any:
    """The event the body holds: JSON, or for Slack's slash commands (and GitHub's form
    setting, `payload=<JSON>`) a form."""
    kind = content_type.split(";")[0].strip().lower()
    if kind == "application/x-www-form-urlencoded" and scheme in (SLACK, GITHUB):
        try:
            fields = parse_qs(body.decode("utf-8"), keep_blank_values=True, strict_parsing=True)
        except (UnicodeDecodeError, ValueError) as exc:
            raise _Unreadable("The body is not a form the trigger can read.") from exc
        if scheme == SLACK:  # a slash command: command, text, user_name, ...
            return {name: values[0] for name, values in fields.items()}
        if "payload" not in fields:
            raise _Unreadable("A GitHub form delivery holds payload=<JSON>; this one does not.")
        body = fields["payload"][0].encode("utf-8")
    if not body.strip():
        raise _Unreadable(NOT_JSON)
    try:
        return json_input_parse(body)
    except JsonInputError as exc:
        raise _Unreadable(NOT_JSON if exc.syntax else str(exc)) from exc


def _id_in(scheme: str, event: Any) -> str:
    """The sender's delivery id when it is in the body: Stripe's event id, Slack's event_id
    (or a slash command's trigger_id)."""
    if not isinstance(event, dict):
        return ""
    if scheme == STRIPE:
        found = event.get("id")
    elif scheme == SLACK:
        found = event.get("event_id") or event.get("trigger_id")
    else:
        found = None
    return found if isinstance(found, str) else ""


def _rate_limit_hit(trigger: Trigger) -> int:
    """Count one signed delivery; the seconds to wait when past PER_MINUTE (0: go on). Redis
    out of reach lets it through (the queue's outbox keeps the call until it is back)."""
    key = f"tools:trigger:{trigger.pk}"
    try:
        client = redis.Redis.from_url(settings.REDIS_URL)
        pipe = client.pipeline()
        pipe.incr(key)
        pipe.ttl(key)
        count, ttl = pipe.execute()
        if int(ttl) < 0:
            client.expire(key, WINDOW_S)
            ttl = WINDOW_S
    except redis.RedisError:
        logger.warning("trigger %s: Redis is out of reach, the rate limit is not counted",
                       trigger.pk)
        return 0
    return max(int(ttl), 1) if int(count) > _per_minute() else 0


def _per_minute() -> int:
    return int(getattr(settings, "TOOLS_TRIGGER_PER_MINUTE", PER_MINUTE))

