"""A killed worker loses nothing: an upload's check and a "Try it" whose worker process is
killed with SIGKILL halfway are taken over by the next worker and finish.

Real processes: a Dramatiq worker started as `up` starts one (`manage.py rundramatiq`) on the
session's PostgreSQL and Redis, the real sandbox, and a real SIGKILL to the process that holds
the work (named by its claim). The new worker's watchdog sees the dead worker's heartbeat
expire and sends the work again. Every wait polls with a generous deadline.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO, Any

import pytest
from django.conf import settings

from autocoder import heartbeat
from marketplace.models import PluginVersion, TryRequest
from marketplace.services.trying import plugin_try_request
from marketplace.services.uploads import plugin_upload_store
from tests.live import child_env, wait_for
from tests.marketplace.conftest import WORD_COUNT_IMPL, Submit, plugin_tree, zip_bytes

# The worker's files are the session's (a worker process does not see a test's tmp_path).
SHARED_VAR_DIR = True
# Long enough to kill the worker while it runs, short enough to run twice.
SLOW_S = 8

SLOW_TEST = f'''import time


def test_takes_a_while():
    time.sleep({SLOW_S})
'''

SLOW_IMPL = WORD_COUNT_IMPL.replace(
    "        return {\"words\": len(str(payload.get(\"text\", \"\")).split())}",
    f"        if payload.get(\"slow\"):\n            import time\n\n"
    f"            time.sleep({SLOW_S})\n"
    "        return {\"words\": len(str(payload.get(\"text\", \"\")).split())}")


class Worker:
    """`manage.py rundramatiq` with one worker process, beating every second."""

    def __init__(self) -> None:
        self.log: IO[str] = tempfile.TemporaryFile("w+")  # closed in stop()
        before = heartbeat.live_worker_ids()
        self.process = subprocess.Popen(
            [sys.executable, "manage.py", "rundramatiq", "--processes", "1", "--threads", "1"],
            cwd=settings.BASE_DIR, stdout=self.log, stderr=subprocess.STDOUT,
            env=child_env(WORKER_HEARTBEAT_INTERVAL_S="1", WORKER_HEARTBEAT_TTL_S="3"),
            start_new_session=True)
        self.id = wait_for(lambda: next(iter(heartbeat.live_worker_ids() - before), None),
                           120, "the worker did not start", self.output)

    def output(self) -> str:
        self.log.seek(0)
        return self.log.read()[-4000:]

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(30)
        self.log.close()


@contextmanager
def workers() -> Iterator[Callable[[], Worker]]:
    """Start workers on demand; every one is gone at the end."""
    started: list[Worker] = []

    def start() -> Worker:
        started.append(Worker())
        return started[-1]

    try:
        yield start
    finally:
        for worker in started:
            worker.stop()


def kill(worker: Worker, holder: str) -> None:
    """SIGKILL the worker process that holds the work (as the kernel's OOM killer would),
    then the rest of its `rundramatiq`."""
    pid = int(holder.rsplit(":", 1)[1])
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: holder not in heartbeat.live_worker_ids() or None, 30,
             "the killed worker's heartbeat did not expire")
    worker.stop()


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)  # the worker processes commit on their own
def test_an_upload_check_whose_worker_is_killed_is_finished_by_the_next_worker(
        market: dict[str, Any], clean_redis: Any) -> None:
    files = {**plugin_tree(), "tests/test_takes_a_while.py": SLOW_TEST}
    with workers() as start:
        first = start()
        version = plugin_upload_store(team=market["acme"], user=market["requester"],
                                      filename="plugin.zip", data=zip_bytes(files),
                                      visibility="team")
        running = wait_for(lambda: PluginVersion.objects.filter(
            pk=version.pk, check_step=PluginVersion.CheckStep.TESTS).exclude(
            claimed_by="").first(), 180, "no worker started the check's tests", first.output)
        assert running.claimed_by == first.id
        kill(first, running.claimed_by)
        # Dead and nobody else running: the check waits, "being checked", for a worker.
        assert PluginVersion.objects.get(pk=version.pk).status == PluginVersion.Status.CHECKING

        second = start()
        done = wait_for(lambda: PluginVersion.objects.exclude(
            status=PluginVersion.Status.CHECKING).filter(pk=version.pk).first(), 300,
            "the check did not finish after the worker was killed", second.output)
    assert done.status == PluginVersion.Status.PENDING, done.check_errors
    assert done.check_attempts == 2 and done.check_errors == []
    assert (done.claimed_by, done.check_token, done.check_step) == ("", "", "done")
    assert sorted(done.artifacts.values_list("kind", flat=True)) == ["sdist", "wheel"]
    assert done.test_report["passed"] >= 1


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_try_whose_worker_is_killed_is_run_again_by_the_next_worker(
        market: dict[str, Any], publish: Submit, clean_redis: Any) -> None:
    assert "time.sleep" in SLOW_IMPL
    version = publish(plugin_tree(body=SLOW_IMPL))
    asked = plugin_try_request(version=version, user=market["requester"], command="count-words",
                               payload={"text": "one two three", "slow": True})
    with workers() as start:
        first = start()
        running = wait_for(lambda: TryRequest.objects.filter(
            pk=asked.pk, status=TryRequest.Status.RUNNING).exclude(claimed_by="").first(),
            120, "no worker started the try", first.output)
        assert running.claimed_by == first.id
        kill(first, running.claimed_by)
        assert TryRequest.objects.get(pk=asked.pk).status == TryRequest.Status.RUNNING

        second = start()
        done = wait_for(lambda: TryRequest.objects.filter(
            pk=asked.pk, status=TryRequest.Status.DONE).first(), 240,
            "the try did not finish after its worker was killed", second.output)
    assert done.result["ok"], done.result
    assert done.result["output"] == {"words": 3}
    assert done.attempts == 2 and done.claimed_by == ""
