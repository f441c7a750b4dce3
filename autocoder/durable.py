"""Durable work: rows a worker claims, the watchdog's sweeps of claims gone stale, and the
transactional outbox. One mechanism for the runs' steps, the marketplace's upload checks and
"Try it" calls, and the tools' calls; the apps keep their models and say what "recover" means.

Claims. A worker takes a row with a guarded update (`claim`): the update names the row as it
must still be (its status, an empty token...), so of two workers only one wins, and it writes
its heartbeat name (`claimed_by`), and optionally counts the attempt and stamps the start. It
lets go with `release` (claimed_by emptied, plus whatever the app's outcome writes).

Sweeps. `orphans_sweep` (the watchdog's quick sweep, every heartbeat interval) finds the rows
whose claiming worker's heartbeat has expired; `stalled_sweep` (the slow one) the rows that
have not moved for longer than any work takes. Each hands the app's `recover` a `Stale`: the
row's id, and a guard, the queryset of that row exactly as it was read (same worker, same
pinned fields), so an update through the guard wins for one sweeper only.

Outbox. A message (an actor's name and its arguments) is written in the caller's transaction
and sent after the commit; what the broker did not take stays in the table until the watchdog
(`outbox_sweep`) gets it through. Messages go out by actor name
(`dramatiq.get_broker().get_actor(name)`), so this module imports no app and no actor; the app
that owns the table registers it (`outbox_register`), with a `deliver` for rows that carry no
actor name (the runs' step messages). Actors must be idempotent: a message may go out twice.

Imports nothing of the apps (projects, runs, marketplace, tools, teams) nor the engine.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Generic, TypeVar

from django.db import models, transaction
from django.db.models import F, QuerySet
from django.utils import timezone

from autocoder import heartbeat

logger = logging.getLogger(__name__)

M = TypeVar("M", bound=models.Model)


# -- claims --------------------------------------------------------------------------------------


def claim(guard: QuerySet[M], *, by: str | None = "claimed_by", attempts: str | None = None,
          started: str | None = None, **fields: Any) -> bool:
    """Take the row(s) `guard` selects with one guarded update; True when this worker won.

    `by` gets this worker's heartbeat name (None: the model records no worker), `attempts` is
    counted up by one, `started` stamped now; `fields` are written as given (a new status, a
    token)."""
    values = dict(fields)
    if by:
        values[by] = heartbeat.current_worker_id()
    if attempts:
        values[attempts] = F(attempts) + 1
    if started:
        values[started] = timezone.now()
    return bool(guard.update(**values))


def release(guard: QuerySet[M], *, by: str = "claimed_by", **fields: Any) -> int:
    """Let go of the claim on the row(s) `guard` selects (`by` emptied), writing `fields`
    with it (an outcome, a status to wait in again); returns how many rows it moved (0: the
    guard no longer matches, someone else moved the row)."""
    return guard.update(**{by: ""}, **fields)


@dataclass(frozen=True)
class Stale(Generic[M]):
    """A row a sweep found stale, handed to the app's `recover`."""

    pk: Any
    # The row exactly as it was read (the sweep's filter, the worker, the pinned fields): an
    # update through it wins for one sweeper only.
    guard: QuerySet[M]
    # The worker whose heartbeat expired ("" for a stalled row).
    worker: str = ""
    # The values of the `pin` fields as read (a run's step token, say).
    pinned: dict[str, Any] = field(default_factory=dict)


Recover = Callable[[Stale[M]], bool]


def orphans_sweep(held: QuerySet[M], recover: Recover[M], *, by: str = "claimed_by",
                  pin: Iterable[str] = (), live: set[str] | None = None) -> list[Any]:
    """The rows of `held` claimed by a worker whose heartbeat has expired (killed, out of
    memory, its machine gone): `recover` is called for each (it re-queues or ends the work
    through the guard); returns the ids it recovered. `live` is the set of live workers (by
    default read from Redis, which raises when Redis is down: an unreachable Redis is never
    taken for "every worker is dead")."""
    alive = live if live is not None else heartbeat.live_worker_ids()
    pinned_fields = list(pin)
    moved: list[Any] = []
    for pk, worker, *values in held.exclude(**{by: ""}).values_list("pk", by, *pinned_fields):
        if worker in alive:
            continue
        pinned = dict(zip(pinned_fields, values, strict=True))
        guard = held.filter(pk=pk, **{by: worker}, **pinned)
        if recover(Stale(pk=pk, guard=guard, worker=worker, pinned=pinned)):
            moved.append(pk)
    return moved


def stalled_sweep(working: QuerySet[M], recover: Recover[M], *, since: str,
                  older_than_s: float, pin: Iterable[str] = (),
                  now: datetime | None = None) -> list[Any]:
    """The rows of `working` whose `since` field is older than `older_than_s` seconds (work
    that stopped moving: a lost message, an in-process caller that died): `recover` is called
    for each; returns the ids it recovered."""
    cutoff = (now or timezone.now()) - timedelta(seconds=older_than_s)
    stalled = working.filter(**{f"{since}__lt": cutoff})
    pinned_fields = list(pin)
    moved: list[Any] = []
    for pk, *values in stalled.values_list("pk", *pinned_fields):
        pinned = dict(zip(pinned_fields, values, strict=True))
        if recover(Stale(pk=pk, guard=stalled.filter(pk=pk, **pinned), pinned=pinned)):
            moved.append(pk)
    return moved


# -- the outbox ----------------------------------------------------------------------------------


# Sends a row that carries no actor name, with what is left of its delay (milliseconds).
Deliver = Callable[[Any, int], None]


@dataclass
class _Outbox:
    model: type[models.Model] | None = None
    deliver: Deliver | None = None


_OUTBOX = _Outbox()


def outbox_register(model: type[models.Model], *, deliver: Deliver | None = None) -> None:
    """Use `model` (fields: actor, args, delay_ms, created_at) as the outbox table; `deliver`
    sends its rows that carry no actor name. Called by the owning app's AppConfig.ready."""
    _OUTBOX.model, _OUTBOX.deliver = model, deliver


def _outbox_model() -> Any:
    if _OUTBOX.model is None:
        raise RuntimeError("no outbox table registered (durable.outbox_register)")
    return _OUTBOX.model


def outbox_message_queue(*, actor: str, args: list[Any], delay_ms: int = 0) -> None:
    """Send a message to the Dramatiq actor named `actor` once the caller's transaction
    commits: a commit always carries its message, even if Redis is down then (the watchdog
    sends it once Redis answers). The actor must be idempotent (a message may go out twice)."""
    row = _outbox_model().objects.create(actor=actor, args=list(args), delay_ms=delay_ms)
    transaction.on_commit(lambda: outbox_send(ids=[row.id]))


def actor_send(actor: str, args: list[Any], delay_ms: int = 0) -> None:
    """One message to the Dramatiq actor named `actor`, now (raises when the broker is
    unreachable; the outbox keeps its message then)."""
    import dramatiq

    dramatiq.get_broker().get_actor(actor).send_with_options(args=tuple(args),
                                                             delay=delay_ms or None)


# The outbox's way to the broker (tests put a recorder here, leaving `actor_send` alone).
_actor_send = actor_send


def outbox_send(*, ids: list[int] | None = None, deliver: Deliver | None = None,
                limit: int = 500) -> list[Any]:
    """Send the outbox's messages (those in `ids`, or all, oldest first) and delete each one
    the broker took; stop at the first failure (Redis down: the rest waits for the next try).
    A row another sender is sending is skipped, so one message goes out once. Never raises.
    Returns the rows sent (deleted from the table; the objects keep their fields and ids).
    `deliver` sends the rows without an actor name (default: the registered one)."""
    model = _outbox_model()
    rows = model.objects.all() if ids is None else model.objects.filter(id__in=ids)
    sent: list[Any] = []
    for row_id in list(rows.order_by("id").values_list("id", flat=True)[:limit]):
        outcome = _outbox_send_one(model, row_id, deliver or _OUTBOX.deliver)
        if outcome is False:
            break
        if outcome is not None:
            sent.append(outcome)
    return sent


def _outbox_send_one(model: Any, row_id: int, deliver: Deliver | None) -> Any:
    """The row when it was sent, None when someone else has it, False when sending failed."""
    with transaction.atomic():
        row = model.objects.select_for_update(skip_locked=True).filter(id=row_id).first()
        if row is None:
            return None
        waited_ms = int((timezone.now() - row.created_at).total_seconds() * 1000)
        delay_ms = max(0, row.delay_ms - waited_ms)
        try:
            if row.actor:
                _actor_send(row.actor, row.args, delay_ms)
            elif deliver is not None:
                deliver(row, delay_ms)
            else:
                raise RuntimeError("no deliver registered for rows without an actor")
        except Exception as error:  # the broker is down: the row stays for the next try
            logger.warning("could not send %s (%s); the outbox keeps it", row, error)
            return False
        model.objects.filter(id=row.id).delete()  # the object keeps its id for the caller
        return row


def outbox_sweep() -> list[int]:
    """The watchdog's quick sweep: send everything the outbox still holds; returns the ids of
    the rows sent."""
    sent = outbox_send()
    if sent:
        logger.info("sent %s message(s) the outbox held", len(sent))
    return [row.id for row in sent]
