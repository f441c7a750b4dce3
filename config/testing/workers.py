"""A real Dramatiq worker inside the test process, on the broker from the settings.

`dramatiq.Worker.start()` adds a `_WorkerMiddleware` to the broker and `stop()` never removes
it. The broker is shared by the whole test session, so every test that started a worker left
one behind: Dramatiq warned about the duplicate, and each stale middleware would still add
consumers for its stopped worker when a queue is declared later (taking messages that no live
worker then runs). `in_process_worker` takes its middleware away again when it stops.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import dramatiq
from dramatiq.worker import _WorkerMiddleware


@contextmanager
def in_process_worker(*, threads: int = 2, idle_ms: int = 100) -> Iterator[dramatiq.Worker]:
    """Start a worker consuming every declared queue; stop it and detach it on exit."""
    import autocoder.tasks  # noqa: F401  (declares the actors, hence the queues to consume)

    broker = dramatiq.get_broker()
    _detach_stopped_workers(broker)
    worker = dramatiq.Worker(broker, worker_threads=threads, worker_timeout=idle_ms)
    worker.start()
    try:
        yield worker
    finally:
        worker.stop()
        _detach(broker, worker)


def _detach(broker: dramatiq.Broker, worker: dramatiq.Worker) -> None:
    broker.middleware[:] = [m for m in broker.middleware
                            if not (isinstance(m, _WorkerMiddleware) and m.worker is worker)]


def _detach_stopped_workers(broker: dramatiq.Broker) -> None:
    """Drop what a worker started without this helper left behind (its threads have ended)."""
    for middleware in list(broker.middleware):
        if isinstance(middleware, _WorkerMiddleware) and not any(
                thread.is_alive() for thread in middleware.worker.workers):
            _detach(broker, middleware.worker)
