"""Step messages survive a Redis outage: each is stored in PostgreSQL (StepOutbox) in the
transaction that commits its step, and sent once Redis answers again; a web action that would
queue work answers 503 in plain words while Redis is down, and changes nothing."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
import redis
from django.test import Client

from autocoder import heartbeat
from config.testing.workers import in_process_worker
from runs.models import Run, StepOutbox
from runs.services import finishing, outbox, resending, stepping
from teams.models import AuditEntry
from tests.engine.conftest import DispatchRecorder
from tests.engine.redis_outage import RedisOutage, session_redis_socket

pytestmark = pytest.mark.django_db


@pytest.fixture
def outage(clean_redis: redis.Redis) -> Iterator[RedisOutage]:
    outage = RedisOutage(session_redis_socket())
    yield outage
    outage.end()  # back for the next tests, whatever this one did


class BrokerDown:
    """A dispatch whose broker is unreachable (what enqueue_step raises then)."""

    def __call__(self, run_id: int, token: str, delay_ms: int = 0) -> None:
        raise redis.ConnectionError("Error 111 connecting to the broker")


def test_the_outbox_keeps_messages_the_broker_refused_and_sends_them_in_order(
        start_run: Callable[..., Run], django_capture_on_commit_callbacks: Any) -> None:
    first, second = start_run("success"), start_run("success")
    with django_capture_on_commit_callbacks(execute=True):
        resending.run_kick(run=first, dispatch=BrokerDown())
        resending.run_kick(run=second, dispatch=BrokerDown())
    assert list(StepOutbox.objects.values_list("run_id", "token")) == [
        (first.id, first.step_token), (second.id, second.step_token)]

    dispatch = DispatchRecorder()
    assert outbox.outbox_send(dispatch=dispatch) == [first.id, second.id]
    assert dispatch.sent == [(first.id, first.step_token, 0), (second.id, second.step_token, 0)]
    assert not StepOutbox.objects.exists()
    assert outbox.outbox_send(dispatch=dispatch) == []  # sent once, not again


def test_a_retry_delay_counts_from_the_commit_not_from_the_late_send(
        start_run: Callable[..., Run]) -> None:
    run = start_run("success")
    row = StepOutbox.objects.create(run=run, token=run.step_token, delay_ms=60_000)
    StepOutbox.objects.filter(id=row.id).update(
        created_at=row.created_at - timedelta(seconds=45))
    dispatch = DispatchRecorder()
    outbox.outbox_send(dispatch=dispatch)
    [(_, _, delay)] = dispatch.sent
    assert 14_000 <= delay <= 15_000


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)  # a real worker commits on its own connections
def test_a_step_committed_while_redis_is_down_goes_on_when_redis_is_back(
        start_run: Callable[..., Run], outage: RedisOutage, settings: Any) -> None:
    settings.WORKER_HEARTBEAT_INTERVAL_S = 1
    run = start_run("success")
    outage.begin()
    # A worker finishes the plan step while Redis is down: the commit keeps its next message.
    next_token = stepping.run_step_perform(run_id=run.id, token=run.step_token,
                                           dispatch=outbox.enqueue_step)
    assert next_token is not None
    assert list(StepOutbox.objects.values_list("run_id", "token")) == [(run.id, next_token)]
    assert Run.objects.get(id=run.id).phase == Run.Phase.IMPLEMENT

    outage.end()
    back = time.time()
    with in_process_worker():  # its watchdog sends what the outbox holds
        final = _settled(run.id, timeout_s=90)
    assert final.status == Run.Status.SUCCEEDED, final.error
    assert not StepOutbox.objects.exists()
    implemented = final.llm_calls.filter(role="implementer").order_by("id").first()
    moved_after_s = implemented.created_at.timestamp() - back
    print(f"run went on {moved_after_s:.1f}s after Redis came back")
    assert moved_after_s < 60


def _settled(run_id: int, timeout_s: float) -> Run:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        run = Run.objects.get(id=run_id)
        if run.is_terminal or run.status in Run.WAITING:
            return run
        time.sleep(0.2)
    raise AssertionError(f"run {run_id} did not settle: {Run.objects.get(id=run_id).phase}")


@pytest.mark.django_db(transaction=True)
def test_a_web_retry_while_redis_is_down_answers_503_and_changes_nothing(
        start_run: Callable[..., Run], people: dict[str, Any], outage: RedisOutage) -> None:
    run = start_run("success")
    finishing.run_cancel(run=run)
    client = Client()
    client.force_login(people["requester"])
    runs, audits = Run.objects.count(), AuditEntry.objects.count()

    outage.begin()
    response = client.post(f"/runs/{run.id}/control/retry/", HTTP_REFERER=f"http://testserver/runs/{run.id}/")
    assert response.status_code == 503
    page = response.content.decode()
    assert "nothing was done" in page and f'href="http://testserver/runs/{run.id}/"' in page
    assert response["Retry-After"] == "30"
    assert (Run.objects.count(), AuditEntry.objects.count()) == (runs, audits)
    assert not StepOutbox.objects.exists()
    # A button sent by htmx gets the message alone, shown at the top of the page it is on.
    pressed = client.post(f"/runs/{run.id}/control/retry/", HTTP_HX_REQUEST="true",
                          HTTP_REFERER="https://elsewhere.example/")
    assert pressed.status_code == 503
    assert (pressed["HX-Retarget"], pressed["HX-Reswap"]) == ("#main", "afterbegin")
    fragment = pressed.content.decode()
    assert 'role="alert"' in fragment and "<html" not in fragment
    assert 'href="/"' in fragment  # not back to another site
    assert (Run.objects.count(), AuditEntry.objects.count()) == (runs, audits)

    # Cancel (the emergency stop) and pause queue nothing: they work without Redis.
    other = start_run("success")
    assert client.post(f"/runs/{other.id}/control/cancel/").status_code == 302
    assert Run.objects.get(id=other.id).status == Run.Status.CANCELLED
    runs, audits = runs + 1, audits + 1

    outage.end()
    assert client.post(f"/runs/{run.id}/control/retry/").status_code == 302
    assert Run.objects.count() == runs + 1 and AuditEntry.objects.count() == audits + 1


def test_the_embedded_redis_keeps_an_append_only_file(redis_client: redis.Redis) -> None:
    session_redis_socket()  # the session's Redis is the embedded one
    assert redis_client.config_get("appendonly") == {"appendonly": "yes"}
    assert heartbeat.redis_reachable()
