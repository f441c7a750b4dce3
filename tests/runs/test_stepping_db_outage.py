"""A run step whose worker meets a database outage waits for the database and is done once.

The outage is this process's outage circuit held open (autocoder/database/outage.py): every
connection the worker's threads ask for is refused at once, as while PostgreSQL is stopped,
until the test closes it. The slow test of tests/foundation/test_db_outage.py and
`manage.py bench_db_outage` stop the real server.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path

import dramatiq
import psycopg
import pytest
from django.db import OperationalError, connection

from autocoder.database import outage
from config.testing.workers import in_process_worker
from runs import tasks
from runs.models import Run
from runs.services import outbox


def wrapped(error: Exception) -> OperationalError:
    try:
        raise OperationalError(str(error)) from error
    except OperationalError as django_error:
        return django_error


def retry_of(error: Exception) -> dramatiq.Retry:
    try:
        raise dramatiq.Retry() from error
    except dramatiq.Retry as retry:
        return retry


def test_an_outage_is_waited_out_other_errors_are_retried_twice() -> None:
    down = wrapped(psycopg.OperationalError("connection failed: No such file or directory"))
    assert tasks.step_retry_when(0, retry_of(down))
    assert tasks.step_retry_when(tasks.OUTAGE_RETRIES - 1, down)
    assert not tasks.step_retry_when(tasks.OUTAGE_RETRIES, down)
    bug = ValueError("a bug")
    assert tasks.step_retry_when(1, bug) and not tasks.step_retry_when(2, bug)
    deadlock = wrapped(psycopg.errors.DeadlockDetected("deadlock detected"))
    assert not tasks.step_retry_when(2, deadlock)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)  # the worker's threads commit on their own
def test_a_step_refused_for_a_while_goes_on_once_the_database_answers(
        start_run: Callable[..., Run], clean_redis: object, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    # Retries every 0.1-0.3 s instead of 2-5 s, so the outage outlasts many of them quickly.
    monkeypatch.setitem(tasks.run_step.options, "min_backoff", 100)
    monkeypatch.setitem(tasks.run_step.options, "max_backoff", 300)
    run = start_run("success", dispatch=outbox.enqueue_step)  # its first message is queued
    circuit = outage.circuit_for(connection.settings_dict)
    caplog.set_level(logging.WARNING, logger="runs.tasks")
    with in_process_worker(threads=1):
        circuit.open("stopped for the test", {"host": str(tmp_path), "dbname": "none"})
        try:
            time.sleep(3)  # the first step's message is refused again and again meanwhile
        finally:
            circuit.close()
        refused = [r for r in caplog.records
                   if r.name == "runs.tasks" and "trying again" in r.getMessage()]
        deadline = time.monotonic() + 60
        while not Run.objects.get(id=run.id).is_terminal and time.monotonic() < deadline:
            time.sleep(0.2)
    final = Run.objects.get(id=run.id)
    assert final.status == Run.Status.SUCCEEDED, (final.status, final.phase, final.error)
    assert len(refused) > tasks.OTHER_RETRIES + 1, refused  # more than it used to get
    assert list(final.iterations.values_list("number", flat=True)) == [1]
    # Each step was done once: one call per role of the script, as without an outage.
    roles = sorted(final.llm_calls.values_list("role", flat=True))
    assert roles == sorted(set(roles)), roles
