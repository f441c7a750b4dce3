"""Prometheus metrics of every process of the stack, served by the web server at /metrics.

The web server, the workers (where runs, sandboxes and model calls happen) and their restarts
are separate processes, so values go through prometheus_client's multiprocess mode: each
process writes its own files in METRICS_DIR and a scrape adds them up. `up` empties the
directory when the stack starts; processes of one compose stack share it through the `var`
volume, each file named by host and pid (containers of one stack reuse small pids).

The names, their labels and how to scrape them: docs/operating.md, "Metrics".
"""

from __future__ import annotations

import os
import re
import socket
import time
from collections import Counter as Tally
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
    values,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

# Run steps take from milliseconds (a checkpoint) to minutes (a model writing code).
STEP_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)
START_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
LLM_BUCKETS = (0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300)

RUN_STEP_SECONDS = Histogram(
    "autocoder_run_step_seconds", "Time one run step (a phase of an attempt) took in a worker.",
    ["phase", "outcome"], buckets=STEP_BUCKETS)
SANDBOX_STARTS = Counter(
    "autocoder_sandbox_starts", "Sandboxes started, by backend.", ["backend"])
SANDBOX_START_SECONDS = Histogram(
    "autocoder_sandbox_start_seconds",
    "Time until a sandbox was ready to run its command (a prepared one is ready at once).",
    ["backend"], buckets=START_BUCKETS)
LLM_CALL_SECONDS = Histogram(
    "autocoder_llm_call_seconds", "Time of one model call attempt, answered or failed.",
    ["provider", "role"], buckets=LLM_BUCKETS)
LLM_CALL_ERRORS = Counter(
    "autocoder_llm_call_errors", "Model call attempts that failed.", ["provider", "role"])
WEBSOCKETS = Gauge(
    "autocoder_websocket_connections", "Open websocket connections, by kind (team or run).",
    ["kind"], multiprocess_mode="livesum")

# Queue depth is read from Redis at scrape time; a few thousand messages are enough to say
# which actors are behind, and keep a scrape cheap when a queue is flooded.
MAX_MESSAGES_READ = 5000


def observe_step(phase: str, outcome: str, seconds: float) -> None:
    RUN_STEP_SECONDS.labels(phase=phase, outcome=outcome).observe(seconds)


def observe_llm_call(provider: str, role: str, seconds: float, failed: bool) -> None:
    LLM_CALL_SECONDS.labels(provider=provider, role=role).observe(seconds)
    if failed:
        LLM_CALL_ERRORS.labels(provider=provider, role=role).inc()


@contextmanager
def sandbox_start(backend: str) -> Iterator[None]:
    """Counts a sandbox start and times it until the block ends."""
    started = time.monotonic()
    yield
    sandbox_started(backend, time.monotonic() - started)


def sandbox_started(backend: str, seconds: float) -> None:
    SANDBOX_STARTS.labels(backend=backend).inc()
    SANDBOX_START_SECONDS.labels(backend=backend).observe(seconds)


def process_identifier(pid: int | None = None) -> str:
    """What a process's files are named by: host and pid (a container's pid alone repeats)."""
    return f"{socket.gethostname()}-{os.getpid() if pid is None else pid}"


def configure(directory: Path) -> None:
    """Write this process's values under `directory` (at start-up, before any is observed:
    every metric here has labels, and a labelled value is made at its first use)."""
    directory.mkdir(parents=True, exist_ok=True)
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(directory)
    values.ValueClass = values.MultiProcessValue(process_identifier)


# A process's file: <kind>_<host>-<pid>.db (see process_identifier).
_PROCESS_FILE = re.compile(
    r"^(?:counter|histogram|summary|gauge_[a-z]+)_(?P<host>.+)-(?P<pid>\d+)\.db$")


def forget_processes(directory: Path) -> None:
    """Remove the files of this host's processes that are gone: the stack counts afresh from
    its start (`up` calls it first). A process still running here (a command, another stack
    on the same directory) keeps its files: it still writes to them."""
    host = socket.gethostname()
    for path in directory.glob("*.db"):
        found = _PROCESS_FILE.match(path.name)
        if found and found["host"] == host and not _alive(int(found["pid"])):
            path.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def process_gone(directory: Path, pid: int) -> None:
    """Forget the live gauges of a process that exited (the supervisor calls it)."""
    multiprocess.mark_process_dead(process_identifier(pid), str(directory))  # type: ignore[arg-type]


def exposition(directory: Path) -> bytes:
    """Every process's metrics and the queues' depth, in Prometheus' text format."""
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry, path=str(directory))
    registry.register(QueueCollector())
    return generate_latest(registry)


class QueueCollector(Collector):
    """Messages waiting in the broker, by queue, actor and state (waiting or delayed)."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        depth = GaugeMetricFamily("autocoder_queue_messages",
                                  "Messages in the broker's queues, by actor.",
                                  labels=["queue", "actor", "state"])
        up = GaugeMetricFamily("autocoder_broker_up", "1 when Redis answered this scrape.")
        try:
            counts = queue_depths()
        except Exception:  # noqa: BLE001  a scrape must say "down", not fail
            up.add_metric([], 0)
        else:
            up.add_metric([], 1)
            for (queue, actor, state), n in sorted(counts.items()):
                depth.add_metric([queue, actor, state], n)
        yield depth
        yield up


def queue_depths() -> dict[tuple[str, str, str], int]:
    """(queue, actor, state) -> messages, read from Dramatiq's Redis keys."""
    import dramatiq
    from dramatiq import Message

    broker = dramatiq.get_broker()
    client = broker.client  # type: ignore[attr-defined]
    namespace = broker.namespace  # type: ignore[attr-defined]
    tally: Tally[tuple[str, str, str]] = Tally()
    for queue in sorted(q for q in broker.get_declared_queues() if not q.endswith((".DQ", ".XQ"))):
        for state, key in (("waiting", f"{namespace}:{queue}"),
                           ("delayed", f"{namespace}:{queue}.DQ")):
            ids = client.lrange(key, 0, MAX_MESSAGES_READ - 1)
            if not ids:
                continue
            for raw in client.hmget(f"{key}.msgs", ids):
                if raw is not None:
                    tally[(queue, Message.decode(raw).actor_name, state)] += 1
    return dict(tally)
