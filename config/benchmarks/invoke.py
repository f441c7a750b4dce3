"""What invoking an activated plugin costs (`manage.py bench_invoke`).

Mode "overhead" (the issue's goal: p50 <= 50 ms): `call_plugin` on a trivial plugin
(on_initialize keeps the api, on_command reads a setting, counts in api.storage, logs a line
and echoes its payload), the whole public call as the portal makes it. Overhead is the call's
wall time minus the time spent inside the plugin's own on_initialize and on_command
(`CallOutcome.overhead_ms`): the request, writing the workdir, the hand-over to the prepared
sandbox (whose interpreter, already started, runs the runner: `in_process`), the runner,
importing the plugin (shipped compiled), collecting the answer, checking it, the teardown
and the start of the next sandbox's preparation.

* prepared: before each timed call the bench waits, untimed, until this thread's next sandbox
  is ready (standby.py), as a worker between two calls that are not back to back would;
* back to back: calls one after another with no pause, so each may wait for its sandbox's
  preparation to finish: what one busy worker thread sees.

Wall time on a shared machine also measures the other load: the fastest sample is printed
too. Further modes (the HTTP API's throughput) are functions next to `overhead` returning a
flat dict of figures, listed in MODES.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any, TypedDict

TRIVIAL_PLUGIN = '''class Plugin:
    def on_initialize(self, api):
        self.api = api

    def on_command(self, name, payload):
        if name != "echo":
            raise ValueError(f"unknown command {name!r}")
        count = self.api.storage.get("count", 0) + 1
        self.api.storage.set("count", count)
        self.api.log(f"echo number {count}")
        return {"echo": payload, "greeting": self.api.settings["greeting"], "count": count}
'''


def trivial_call() -> Any:
    from autocoder.calling.invoke import PluginCall

    files = {"bench_echo/__init__.py": "", "bench_echo/plugin.py": TRIVIAL_PLUGIN,
             "plugin.toml": '[plugin]\nname = "bench-echo"\nentry = "bench_echo.plugin:Plugin"\n'}
    return PluginCall(files=files, entry="bench_echo.plugin:Plugin", command="echo",
                      payload={"text": "hello", "values": list(range(20))},
                      settings={"greeting": "hi"}, storage={"count": 0})


def _percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def _figures(samples: list[float]) -> tuple[float, float, float]:
    """The median, the 95th percentile and the fastest, in ms."""
    return (round(statistics.median(samples), 2), round(_percentile(samples, 0.95), 2),
            round(min(samples), 2))


class OverheadFigures(TypedDict):
    """What `overhead` prints (docs/operating.md): milliseconds per call."""

    mode: str
    runs: int
    overhead_p50_ms: float
    overhead_p95_ms: float
    overhead_min_ms: float
    call_p50_ms: float
    call_p95_ms: float
    call_min_ms: float
    back_to_back_overhead_p50_ms: float
    back_to_back_overhead_p95_ms: float
    back_to_back_overhead_min_ms: float
    goal_p50_ms: int


def overhead(runs: int = 50) -> OverheadFigures:
    from autocoder.calling.invoke import call_plugin
    from autocoder.sandbox import docker_standby, standby

    call = trivial_call()

    def one() -> tuple[float, float]:
        started = time.perf_counter()
        outcome = call_plugin(call)
        wall = (time.perf_counter() - started) * 1000
        if not outcome.ok:
            raise RuntimeError(f"the trivial plugin failed: {outcome.error} {outcome.detail}")
        return wall, wall - outcome.plugin_ms

    def next_sandbox_ready() -> None:
        prepared = standby.prepared()
        if prepared is not None:
            prepared.wait_ready()
        docker_prepared = docker_standby.prepared()  # SANDBOX_BACKEND=docker
        if docker_prepared is not None:
            docker_prepared.wait_ready()
            docker_standby.settle()

    for _ in range(3):  # warm-up: the first call of a thread builds its sandbox cold
        next_sandbox_ready()
        one()
    prepared: list[tuple[float, float]] = []
    back_to_back: list[tuple[float, float]] = []
    for _ in range(runs):
        next_sandbox_ready()
        prepared.append(one())
        back_to_back.append(one())
    over = _figures([o for _w, o in prepared])
    call_ms = _figures([w for w, _o in prepared])
    back = _figures([o for _w, o in back_to_back])
    return {"mode": "overhead", "runs": runs,
            "overhead_p50_ms": over[0], "overhead_p95_ms": over[1], "overhead_min_ms": over[2],
            "call_p50_ms": call_ms[0], "call_p95_ms": call_ms[1], "call_min_ms": call_ms[2],
            "back_to_back_overhead_p50_ms": back[0], "back_to_back_overhead_p95_ms": back[1],
            "back_to_back_overhead_min_ms": back[2],
            "goal_p50_ms": 50}


MODES: dict[str, Callable[[int], OverheadFigures]] = {"overhead": overhead}
