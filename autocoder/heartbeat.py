"""Worker heartbeat: each Dramatiq worker process keeps a short-lived key alive in Redis.

`/healthz` and `doctor` count the keys; a worker that dies stops refreshing its key and drops
out after WORKER_HEARTBEAT_TTL_S, with no clean-up needed. The same key names the worker that
claimed a run's step (`Run.claimed_by`), so the watchdog can tell a step whose worker died.

The watchdog runs in one worker of the installation at a time (a Redis lock): every
WORKER_HEARTBEAT_INTERVAL_S the quick sweep (send the outbox, take over the steps of dead
workers), every WATCHDOG_INTERVAL_S the slow one (stalled runs, held runs).
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
from collections.abc import Callable
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
WATCHDOG_QUICK_LOCK = "autocoder:watchdog:quick"

# The apps' sweeps (the runs app's outbox and stalled or orphaned steps, the marketplace's
# upload checks whose worker died or that stopped moving), registered from their
# AppConfig.ready in INSTALLED_APPS order: this module imports none of them.
Sweep = Callable[[], list[int]]
QUICK_SWEEPS: list[Sweep] = []
SLOW_SWEEPS: list[Sweep] = []


def sweep_register(sweep: Sweep, *, quick: bool) -> None:
    """Run `sweep` in the quick (every heartbeat interval) or the slow watchdog sweep."""
    sweeps = QUICK_SWEEPS if quick else SLOW_SWEEPS
    if sweep not in sweeps:
        sweeps.append(sweep)


# Set once this process beats: only a beating worker's claims can be checked for life, so an
# in-process driver (`generate`) claims nothing and is never taken over.
_beating_as = ""


def _client() -> redis.Redis:
    return redis.Redis.from_url(settings.REDIS_URL, socket_timeout=2, socket_connect_timeout=2)


def worker_id(pid: int | None = None) -> str:
    """This worker's name in heartbeats and claims: host:pid."""
    return f"{socket.gethostname()}:{pid or os.getpid()}"


def heartbeat_key(pid: int | None = None) -> str:
    return f"{KEY_PREFIX}{worker_id(pid)}"


def current_worker_id() -> str:
    """host:pid when this process is a worker that beats, else "" (it claims nothing)."""
    return _beating_as if _beating_as == worker_id() else ""


def live_worker_ids() -> set[str]:
    """The workers whose heartbeat has not expired (selector; raises when Redis is down, so a
    sweep never mistakes an unreachable Redis for "every worker is dead")."""
    client = _client()
    return {key.decode()[len(KEY_PREFIX):]
            for key in client.scan_iter(match=f"{KEY_PREFIX}*", count=100)}


def redis_reachable() -> bool:
    """Whether Redis (the broker) answers now, within a second."""
    try:
        return bool(redis.Redis.from_url(settings.REDIS_URL, socket_timeout=1,
                                         socket_connect_timeout=1).ping())
    except (redis.RedisError, OSError):
        return False


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

    def before_worker_boot(self, broker: dramatiq.Broker, worker: dramatiq.Worker) -> None:
        """Beat before any message is taken: a claim made before the first beat would look
        like a dead worker's to the watchdog."""
        global _beating_as
        _beating_as = worker_id()
        try:
            beat(time.time())
        except redis.RedisError:
            logger.warning("could not write the first heartbeat; the thread will retry")

    def after_worker_boot(self, broker: dramatiq.Broker, worker: dramatiq.Worker) -> None:
        global _beating_as
        _beating_as = worker_id()
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="heartbeat", daemon=True)
        self._thread.start()

    def before_worker_shutdown(self, broker: dramatiq.Broker, worker: dramatiq.Worker) -> None:
        # The key goes at once: steps this worker still holds when it stops (killed by a
        # deadline) are taken over by the next sweep instead of after the TTL.
        self._stop.set()
        try:
            _client().delete(heartbeat_key())
        except redis.RedisError:
            logger.warning("could not remove the heartbeat key on shutdown")

    def after_worker_shutdown(self, broker: dramatiq.Broker, worker: dramatiq.Worker) -> None:
        global _beating_as
        _beating_as = ""

    def _run(self) -> None:
        started_at = time.time()
        client = _client()
        while not self._stop.is_set():
            try:
                beat(started_at, client=client)
                self._sweep_when_due(client)
            except redis.RedisError:
                logger.warning("heartbeat failed (Redis unreachable?); will retry")
            self._stop.wait(settings.WORKER_HEARTBEAT_INTERVAL_S)

    @staticmethod
    def _sweep_when_due(client: redis.Redis) -> None:
        quick_s = max(1, int(settings.WORKER_HEARTBEAT_INTERVAL_S))
        if client.set(WATCHDOG_QUICK_LOCK, os.getpid(), nx=True, ex=quick_s):
            watchdog_quick_sweep()
        if client.set(WATCHDOG_LOCK, os.getpid(), nx=True, ex=WATCHDOG_INTERVAL_S):
            watchdog_sweep()


def watchdog_quick_sweep() -> list[int]:
    """The quick sweeps the apps registered (the runs app: send what the outbox still holds,
    re-send the step of runs whose claiming worker died); never raises."""
    return _sweep_all(tuple(QUICK_SWEEPS))


def watchdog_sweep() -> list[int]:
    """The slow sweeps the apps registered (the runs app: re-send the step of runs that
    stopped moving, let held runs go on once the part they wait for works); never raises."""
    return _sweep_all(tuple(SLOW_SWEEPS))


def _sweep_all(sweeps: tuple[Any, ...]) -> list[int]:
    from django.db import close_old_connections

    from autocoder.database.outage import describe, is_outage

    moved: list[int] = []
    for sweep in sweeps:
        name = getattr(sweep, "__name__", sweep)
        try:
            moved += sweep()
        except Exception as error:  # the heartbeat thread must survive a database hiccup
            if is_outage(error):  # one line per sweep, not a traceback every few seconds
                logger.warning("watchdog sweep %s: %s; will retry", name, describe(error))
            else:
                logger.exception("watchdog sweep %s failed; will retry", name)
        finally:
            close_old_connections()
    return moved
