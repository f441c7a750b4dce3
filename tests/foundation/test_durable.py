"""Durable work (autocoder/durable.py) on its own tables: a worker's claim, the watchdog's
sweeps of claims whose worker died or that stopped moving, and the outbox's delivery.

The tables are made for these tests only (isolated models, created in the test's transaction
on the session's real PostgreSQL and gone with its rollback), so what is tested is the
mechanism the runs, the marketplace and the tools share, not one of them. The marketplace's and
the runs' own watchdog tests (tests/marketplace/test_checks_on_the_queue.py,
tests/runs/test_resending.py) test what each app does with it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import dramatiq
import pytest
import redis
from django.db import connection, models
from django.test.utils import isolate_apps
from django.utils import timezone

from autocoder import durable, heartbeat

pytestmark = pytest.mark.django_db

ECHO_KEY = "tests:durable:echo"


@dramatiq.actor(actor_name="durable_test_echo", max_retries=0)
def durable_test_echo(word: str) -> None:
    """The actor the outbox delivers to in the end-to-end test: it only writes to Redis."""
    from django.conf import settings

    redis.Redis.from_url(settings.REDIS_URL).rpush(ECHO_KEY, word)


class Tables:
    job: Any
    message: Any


@pytest.fixture
def tables(db: None) -> Iterator[Tables]:
    """A claimed-work table (Job) and an outbox table (Message), registered as the outbox for
    the test (the runs app's registration is put back afterwards)."""
    with isolate_apps("autocoder"):
        class Job(models.Model):
            status = models.CharField(max_length=8, default="pending")
            claimed_by = models.CharField(max_length=120, blank=True, default="")
            attempts = models.PositiveSmallIntegerField(default=0)
            started_at = models.DateTimeField(null=True)
            token = models.CharField(max_length=40, blank=True, default="")
            created_at = models.DateTimeField(auto_now_add=True)

            class Meta:
                app_label = "autocoder"

            def __str__(self) -> str:
                return f"job {self.pk} {self.status}"

        class Message(models.Model):
            actor = models.CharField(max_length=100, blank=True)
            args = models.JSONField(default=list, blank=True)
            token = models.CharField(max_length=40, blank=True)
            delay_ms = models.PositiveIntegerField(default=0)
            created_at = models.DateTimeField(auto_now_add=True)

            class Meta:
                app_label = "autocoder"

            def __str__(self) -> str:
                return f"message {self.actor}{tuple(self.args)}"

        with connection.schema_editor() as editor:
            editor.create_model(Job)
            editor.create_model(Message)
        made = Tables()
        made.job, made.message = Job, Message
        registered = (durable._OUTBOX.model, durable._OUTBOX.deliver)
        durable.outbox_register(Message)
        try:
            yield made
        finally:
            durable.outbox_register(registered[0], deliver=registered[1])  # type: ignore[arg-type]


class Sent:
    """Records the messages the outbox hands to the broker (instead of Redis)."""

    def __init__(self) -> None:
        self.messages: list[tuple[str, list[Any], int]] = []
        self.down = False

    def __call__(self, actor: str, args: list[Any], delay_ms: int) -> None:
        if self.down:
            raise redis.ConnectionError("Error 111 connecting to localhost:6379")
        self.messages.append((actor, list(args), delay_ms))


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> Sent:
    recorder = Sent()
    monkeypatch.setattr(durable, "_actor_send", recorder)
    return recorder


def as_worker(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    monkeypatch.setattr(heartbeat, "current_worker_id", lambda: name)


# -- claims --------------------------------------------------------------------------------------


def test_one_worker_wins_a_claim_and_its_name_attempt_and_start_are_recorded(
        tables: Tables, monkeypatch: pytest.MonkeyPatch) -> None:
    job = tables.job.objects.create()
    pending = tables.job.objects.filter(pk=job.pk, status="pending")
    as_worker(monkeypatch, "worker-a:1")
    assert durable.claim(pending, attempts="attempts", started="started_at", status="running")
    as_worker(monkeypatch, "worker-b:2")
    # The second worker's guarded update finds the row moved on: a duplicate message.
    assert not durable.claim(pending, attempts="attempts", started="started_at",
                             status="running")
    job.refresh_from_db()
    assert (job.status, job.claimed_by, job.attempts) == ("running", "worker-a:1", 1)
    assert job.started_at is not None


def test_a_claim_without_a_worker_field_only_moves_the_row(tables: Tables) -> None:
    job = tables.job.objects.create()
    assert durable.claim(tables.job.objects.filter(pk=job.pk), by=None, status="running")
    job.refresh_from_db()
    assert (job.status, job.claimed_by, job.attempts, job.started_at) == ("running", "", 0, None)


def test_release_lets_go_of_the_claim_under_its_guard_only(
        tables: Tables, monkeypatch: pytest.MonkeyPatch) -> None:
    job = tables.job.objects.create()
    as_worker(monkeypatch, "worker-a:1")
    assert durable.claim(tables.job.objects.filter(pk=job.pk), token="t1", status="running")
    # A worker that lost its claim (another took the row over) releases nothing.
    assert durable.release(tables.job.objects.filter(pk=job.pk, token="t0"), status="done") == 0
    assert durable.release(tables.job.objects.filter(pk=job.pk, token="t1"), token="",
                           status="done") == 1
    job.refresh_from_db()
    assert (job.status, job.claimed_by, job.token) == ("done", "", "")


# -- sweeps --------------------------------------------------------------------------------------


def requeue(stale: durable.Stale[Any]) -> bool:
    return bool(durable.release(stale.guard, status="pending"))


def test_the_orphans_sweep_recovers_the_work_of_dead_workers_once(
        tables: Tables, monkeypatch: pytest.MonkeyPatch) -> None:
    """Worker a claims a job and dies (nothing after the claim runs: SIGKILL); worker b's job
    and a job nobody holds are left alone. One sweeper wins: the second sweep finds nothing."""
    Job = tables.job
    dead, alive, waiting = Job.objects.create(), Job.objects.create(), Job.objects.create()
    as_worker(monkeypatch, "worker-a:1")
    durable.claim(Job.objects.filter(pk=dead.pk), status="running")
    as_worker(monkeypatch, "worker-b:2")
    durable.claim(Job.objects.filter(pk=alive.pk), status="running")
    running = Job.objects.filter(status="running")

    assert durable.orphans_sweep(running, requeue, live={"worker-a:1", "worker-b:2"}) == []
    assert durable.orphans_sweep(running, requeue, live={"worker-b:2"}) == [dead.pk]
    assert durable.orphans_sweep(running, requeue, live={"worker-b:2"}) == []  # once
    states = dict(Job.objects.values_list("pk", "status"))
    assert states == {dead.pk: "pending", alive.pk: "running", waiting.pk: "pending"}
    assert Job.objects.get(pk=dead.pk).claimed_by == ""


def test_the_orphans_sweep_hands_recover_a_guard_pinned_to_what_it_read(
        tables: Tables, monkeypatch: pytest.MonkeyPatch) -> None:
    """Between the sweep's read and its update the row moved on (a new token, another
    worker): the guard no longer matches, so recovering it does nothing."""
    Job = tables.job
    job = Job.objects.create()
    as_worker(monkeypatch, "worker-a:1")
    durable.claim(Job.objects.filter(pk=job.pk), status="running", token="t1")
    seen: list[durable.Stale[Any]] = []

    def moved_meanwhile(stale: durable.Stale[Any]) -> bool:
        seen.append(stale)
        Job.objects.filter(pk=job.pk).update(token="t2")
        return requeue(stale)

    assert durable.orphans_sweep(Job.objects.filter(status="running"), moved_meanwhile,
                                 pin=["token"], live=set()) == []
    [stale] = seen
    assert (stale.pk, stale.worker, stale.pinned) == (job.pk, "worker-a:1", {"token": "t1"})
    assert Job.objects.get(pk=job.pk).status == "running"


def test_the_orphans_sweep_never_takes_an_unreachable_redis_for_dead_workers(
        tables: Tables, monkeypatch: pytest.MonkeyPatch) -> None:
    def down() -> set[str]:
        raise redis.ConnectionError("Error 111 connecting to localhost:6379")

    monkeypatch.setattr(heartbeat, "live_worker_ids", down)
    as_worker(monkeypatch, "worker-a:1")
    job = tables.job.objects.create()
    durable.claim(tables.job.objects.filter(pk=job.pk), status="running")
    with pytest.raises(redis.ConnectionError):
        durable.orphans_sweep(tables.job.objects.filter(status="running"), requeue)
    assert tables.job.objects.get(pk=job.pk).status == "running"


def test_the_stalled_sweep_recovers_work_that_stopped_moving(tables: Tables) -> None:
    Job = tables.job
    old, recent = Job.objects.create(status="running"), Job.objects.create(status="running")
    Job.objects.filter(pk=old.pk).update(started_at=timezone.now() - timedelta(minutes=20))
    Job.objects.filter(pk=recent.pk).update(started_at=timezone.now())
    running = Job.objects.filter(status="running")

    assert durable.stalled_sweep(running, requeue, since="started_at",
                                 older_than_s=15 * 60) == [old.pk]
    assert durable.stalled_sweep(running, requeue, since="started_at",
                                 older_than_s=15 * 60) == []  # recovered once
    # "Now" may be given (a sweep that reads the clock once for several updates).
    later = timezone.now() + timedelta(minutes=30)
    assert durable.stalled_sweep(running, requeue, since="started_at", older_than_s=15 * 60,
                                 now=later) == [recent.pk]


# -- the outbox ----------------------------------------------------------------------------------


def test_a_message_is_sent_after_the_commit_and_the_outbox_is_empty_again(
        tables: Tables, sent: Sent, django_capture_on_commit_callbacks: Any) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        durable.outbox_message_queue(actor="durable_test_echo", args=["hello"])
        assert sent.messages == []  # nothing goes out before the commit
        assert tables.message.objects.count() == 1
    assert sent.messages == [("durable_test_echo", ["hello"], 0)]
    assert not tables.message.objects.exists()


def test_the_outbox_keeps_what_the_broker_refused_and_the_sweep_sends_it_in_order(
        tables: Tables, sent: Sent, django_capture_on_commit_callbacks: Any) -> None:
    sent.down = True
    with django_capture_on_commit_callbacks(execute=True):
        durable.outbox_message_queue(actor="durable_test_echo", args=["one"])
        durable.outbox_message_queue(actor="durable_test_echo", args=["two"])
    assert tables.message.objects.count() == 2 and sent.messages == []

    sent.down = False
    ids = list(tables.message.objects.values_list("id", flat=True))
    assert durable.outbox_sweep() == ids  # what the workers' watchdog does every few seconds
    assert [args for _, args, _ in sent.messages] == [["one"], ["two"]]
    assert durable.outbox_sweep() == []  # sent once, not again


def test_rows_without_an_actor_go_to_the_registered_deliver_with_what_is_left_of_the_delay(
        tables: Tables, sent: Sent) -> None:
    delivered: list[tuple[str, int]] = []
    durable.outbox_register(tables.message,
                            deliver=lambda row, delay_ms: delivered.append((row.token, delay_ms)))
    row = tables.message.objects.create(token="step-1", delay_ms=60_000)
    tables.message.objects.filter(id=row.id).update(
        created_at=row.created_at - timedelta(seconds=45))
    [out] = durable.outbox_send(ids=[row.id])
    assert out.id == row.id and out.token == "step-1"
    [(token, delay)] = delivered
    assert token == "step-1" and 14_000 <= delay <= 15_000
    assert sent.messages == [] and not tables.message.objects.exists()


@pytest.mark.django_db(transaction=True)  # the tables outlive the test's transaction
def test_a_message_goes_through_the_real_broker_to_its_actor(
        worker: dramatiq.Worker, redis_client: redis.Redis) -> None:
    """End to end, nothing patched: the outbox sends by actor name on the session's Redis and
    an in-process worker runs the actor."""
    with isolate_apps("autocoder"):
        class Letter(models.Model):
            actor = models.CharField(max_length=100, blank=True)
            args = models.JSONField(default=list, blank=True)
            delay_ms = models.PositiveIntegerField(default=0)
            created_at = models.DateTimeField(auto_now_add=True)

            class Meta:
                app_label = "autocoder"

            def __str__(self) -> str:
                return f"letter {self.actor}{tuple(self.args)}"

        with connection.schema_editor() as editor:
            editor.create_model(Letter)
        registered = (durable._OUTBOX.model, durable._OUTBOX.deliver)
        durable.outbox_register(Letter)
        try:
            durable.outbox_message_queue(actor="durable_test_echo", args=["through redis"])
            deadline = time.monotonic() + 20
            while not redis_client.lrange(ECHO_KEY, 0, -1) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert redis_client.lrange(ECHO_KEY, 0, -1) == [b"through redis"]
            assert not Letter._default_manager.exists()
        finally:
            durable.outbox_register(registered[0], deliver=registered[1])  # type: ignore[arg-type]
            with connection.schema_editor() as editor:
                editor.delete_model(Letter)
