"""Worker heartbeat: each Dramatiq worker process keeps a short-lived key alive in Redis.

`/healthz` and `doctor` count the keys; a worker that dies stops refreshing its key and drops
out after WORKER_HEARTBEAT_TTL_S, with no clean-up needed.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
from typing import Any

import dramatiq
import redis
from django.conf import settings
from dramatiq.middleware import Middleware

logger = logging.getLogger(__name__)

KEY_PREFIX = "autocoder:worker:"
# One worker in the whole installation sweeps for stalled runs per interval (a Redis lock).
WATCHDOG_LOCK = "autocoder:watchdog"
WATCHDOG_INTERVAL_S = 60


def _client() -> redis.Redis:
    return redis.Redis.from_url(settings.REDIS_URL, socket_timeout=2)


def heartbeat_key(pid: int | None = None) -> str:
    return f"{KEY_PREFIX}{socket.gethostname()}:{pid or os.getpid()}"


def beat(started_at: float, *, client: redis.Redis | None = None) -> None:
    payload = {"host": socket.gethostname(), "pid": os.getpid(), "started_at": started_at,
               "beat_at": time.time()}
    (client or _client()).set(heartbeat_key(), json.dumps(payload),
                              ex=int(settings.WORKER_HEARTBEAT_TTL_S))


def live_workers() -> list[dict[str, Any]]:
    """The workers whose heartbeat has not expired (selector)."""
    client = _client()
    keys = list(client.scan_iter(match=f"{KEY_PREFIX}*", count=100))
    values = client.mget(keys) if keys else []
    return [json.loads(value) for value in values if value]


class WorkerHeartbeat(Middleware):
    """Dramatiq middleware that beats from a daemon thread while the worker runs."""

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def after_worker_boot(self, broker: dramatiq.Broker, worker: dramatiq.Worker) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="heartbeat", daemon=True)
        self._thread.start()

    def before_worker_shutdown(self, broker: dramatiq.Broker, worker: dramatiq.Worker) -> None:
        self._stop.set()
        try:
            _client().delete(heartbeat_key())
        except redis.RedisError:
            logger.warning("could not remove the heartbeat key on shutdown")

    def _run(self) -> None:
        started_at = time.time()
        client = _client()
        while not self._stop.is_set():
            try:
                beat(started_at, client=client)
                if client.set(WATCHDOG_LOCK, os.getpid(), nx=True, ex=WATCHDOG_INTERVAL_S):
                    watchdog_sweep()
            except redis.RedisError:
                logger.exception("heartbeat failed; will retry")
            self._stop.wait(settings.WORKER_HEARTBEAT_INTERVAL_S)


def watchdog_sweep() -> list[int]:
    """Re-send the step of runs that stopped moving (see runs_stalled_kick) and let held runs
    go on once the part they wait for works (runs_held_release); never raises."""
    from django.db import close_old_connections

    from autocoder.engine.services import runs_held_release, runs_stalled_kick

    moved: list[int] = []
    for sweep in (runs_stalled_kick, runs_held_release):
        try:
            moved += sweep()
        except Exception:  # the heartbeat thread must survive a database hiccup
            logger.exception("watchdog sweep %s failed; will retry", sweep.__name__)
        finally:
            close_old_connections()
    return moved
