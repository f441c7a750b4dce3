"""Start-up cost of the bwrap sandbox and time of the safety gate (`manage.py sandbox_bench`).

What is measured, so that the comparison stays honest:
* outside: `subprocess.run([venv python, -S, -I, -c, pass])` with captured pipes;
* inside: `sandbox.run({}, ["python", "-S", "-I", "-c", "pass"], backend="bwrap")`, i.e. the
  whole public call, in the state a worker meets between its runs: this thread's next
  sandbox is prepared (standby.py), so the call hands the job over, supervises it, collects,
  tears the sandbox down (workdir unmounted) and starts preparing the next one. Before each
  timed call the bench waits, untimed, until that next sandbox is ready, as the seconds of
  an LLM call between a loop's runs would;
* cold: the same call with nothing prepared (a worker thread's first run): workdir tmpfs
  mount, bwrap set-up of every namespace, the launcher's start, then the same as inside;
* gate: `safety.scan_files` (AST policy + bandit) on a generated 500-line plugin module.
Same interpreter, same flags (-S -I), samples interleaved.

The Docker backend (`docker`: runc, `docker-runsc`: gVisor) is measured the same way: inside,
this thread's next container is prepared (docker_standby.py) and the call hands the job over
on its attached stdin, follows its output to the frame and queues the container's removal;
before each timed call the bench waits, untimed, until the next container is started and the
previous one removed. Cold: nothing prepared, the container is created and started in the
call (what a thread's first run, or a run whose limits differ from the prepared ones, waits).
The interpreter outside is this machine's; inside it is the image's (the same Python 3.11).

Wall time is what a caller waits; on a shared, loaded machine it also measures the other
load, so the fastest sample is printed beside each median, and the gate (which runs in this
process) also reports its CPU time.
"""

from __future__ import annotations

import resource
import statistics
import subprocess
import time
from collections.abc import Callable
from typing import TypedDict

from autocoder.sandbox.types import DEFAULT_LIMITS

PASS_ARGS = ["-S", "-I", "-c", "pass"]


def _timed(call: Callable[[], object]) -> float:
    started = time.perf_counter()
    call()
    return (time.perf_counter() - started) * 1000


def _cpu_ms() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    return (own.ru_utime + own.ru_stime) * 1000


def _timed_both(call: Callable[[], object]) -> tuple[float, float]:
    cpu = _cpu_ms()
    wall = _timed(call)
    return wall, _cpu_ms() - cpu


BACKENDS = {"bwrap": ("bwrap", ""), "docker": ("docker", ""), "docker-runsc": ("docker", "runsc")}


class StartupFigures(TypedDict):
    """What `sandbox_bench` prints of one backend: milliseconds of `python -S -I -c pass`."""

    backend: str
    runs: int
    outside_ms: float
    inside_ms: float
    ratio: float
    added_ms: float
    cold_ms: float
    cold_ratio: float
    outside_min_ms: float
    inside_min_ms: float
    cold_min_ms: float


def startup(runs: int = 30, backend: str = "bwrap") -> StartupFigures:
    """`backend`: a name of BACKENDS."""
    from autocoder.sandbox import bwrap, docker_backend, docker_standby, standby
    from autocoder.sandbox.runner import run

    kind, runtime = BACKENDS[backend]
    interpreter = bwrap.host_layout().interpreter

    def outside() -> None:
        subprocess.run([interpreter, *PASS_ARGS], capture_output=True, check=True)

    def inside() -> None:
        if kind == "docker":
            result = docker_backend.run({}, ["python", *PASS_ARGS], DEFAULT_LIMITS,
                                        runtime=runtime)
        else:
            result = run({}, ["python", *PASS_ARGS], backend="bwrap")
        if result.exit_code != 0:
            raise RuntimeError(f"the sandboxed interpreter failed: {result.stderr}")

    def next_sandbox_ready() -> None:
        prepared = (docker_standby if kind == "docker" else standby).prepared()
        if prepared is not None:
            prepared.wait_ready()
        if kind == "docker":
            docker_standby.settle()  # the previous job's container is removed

    for warm_up in (outside, inside, outside, inside):
        warm_up()
    wall: dict[str, list[float]] = {"outside": [], "inside": [], "cold": []}
    for _ in range(runs):
        wall["outside"].append(_timed(outside))
        next_sandbox_ready()
        wall["inside"].append(_timed(inside))
        (docker_standby if kind == "docker" else standby).release_all()
        wall["cold"].append(_timed(inside))
    (docker_standby if kind == "docker" else standby).release_all()
    # rounded first, so that the printed ratio is the printed figures' ratio
    median = {name: round(statistics.median(samples), 2) for name, samples in wall.items()}
    return {"backend": backend, "runs": runs, "outside_ms": round(median["outside"], 2),
            "inside_ms": round(median["inside"], 2),
            "ratio": round(median["inside"] / median["outside"], 2),
            "added_ms": round(median["inside"] - median["outside"], 2),
            "cold_ms": round(median["cold"], 2),
            "cold_ratio": round(median["cold"] / median["outside"], 2),
            "outside_min_ms": round(min(wall["outside"]), 2),
            "inside_min_ms": round(min(wall["inside"]), 2),
            "cold_min_ms": round(min(wall["cold"]), 2)}


def plugin_source(lines: int = 500) -> str:
    """A plausible plugin module of about `lines` lines (functions, a class, data)."""
    out = ['"""Generated benchmark plugin."""', "", "from __future__ import annotations", "",
           "import json", "import re", "from dataclasses import dataclass", "", ""]
    index = 0
    while len(out) < lines - 12:
        out += [f"def step_{index}(payload: dict, factor: int = {index % 7 + 1}) -> dict:",
                f'    """Step {index}: scale the numbers found in the payload."""',
                "    values = [v * factor for v in payload.get('values', []) if v > 0]",
                f"    label = re.sub(r'\\s+', '-', str(payload.get('name', 'step-{index}')))",
                "    if not values:",
                "        return {'label': label, 'total': 0}",
                "    return {'label': label, 'total': sum(values), 'max': max(values)}", "", ""]
        index += 1
    out += ["@dataclass", "class Plugin:", "    name: str = 'bench'", "",
            "    def on_command(self, name: str, payload: dict) -> dict:",
            "        handlers = {f'step-{i}': f for i, f in enumerate(STEPS)}",
            "        if name not in handlers:",
            "            raise ValueError(f'unknown command {name}')",
            "        return json.loads(json.dumps(handlers[name](payload)))", "", ""]
    out.append("STEPS = [" + ", ".join(f"step_{i}" for i in range(index)) + "]")
    return "\n".join(out) + "\n"


def gate(runs: int = 20) -> dict[str, float | str]:
    from autocoder.safety import scan_files

    files = {"bench_plugin/plugin.py": plugin_source()}
    report = scan_files(files)  # warm-up: bandit loads its plugins once per process
    samples = [_timed_both(lambda: scan_files(files)) for _ in range(runs)]
    return {"scan_lines": files["bench_plugin/plugin.py"].count("\n"),
            "scan_verdict": report.verdict,
            "scan_ms": round(statistics.median(w for w, _c in samples), 2),
            "scan_cpu_ms": round(statistics.median(c for _w, c in samples), 2)}
