"""`manage.py up`: the whole stack in one command (what `make run` calls).

`up` supervises its children itself: the ASGI server and one Dramatiq process per worker
(`--processes 1`, so one dead worker takes nobody else down). A child that exits is started
again within seconds; the others go on serving. Ctrl-C or SIGTERM stops everything in order
(web, then workers, then Redis and PostgreSQL) within STOP_BUDGET_S.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand

from projects.services import demo_data_ensure

HEALTH_TIMEOUT_S = 120
# A child that lived shorter than this crashed at start-up: wait longer before each retry.
QUICK_EXIT_S = 10.0
MAX_RESTART_DELAY_S = 30.0
WEB_STOP_S = 1.5
# Dramatiq lets a step finish this long on stop; a step cut short is taken over by the next
# start's watchdog (its claim names a worker whose heartbeat is gone).
WORKER_SHUTDOWN_S = 2.0
WORKER_STOP_S = WORKER_SHUTDOWN_S + 2.5
# How long an idle worker waits for a message before it looks at its stop flag again
# (dramatiq's default, 1 s, costs a clean stop about 2 s).
WORKER_POLL_MS = "500"


class Stop(Exception):
    """Ctrl-C or SIGTERM reached `up`."""


@dataclass
class Child:
    """One supervised server process, in a process group of its own."""

    name: str
    command: list[str]
    process: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    quick_exits: int = 0
    restart_at: float | None = None
    restarts: int = 0
    env: dict[str, str] | None = None

    def start(self) -> None:
        # Own process group: a Ctrl-C in the terminal reaches `up` only, which stops the
        # children in order; killing the group also takes a dead worker's orphans.
        env = {**os.environ, **self.env} if self.env else None
        self.process = subprocess.Popen(self.command, cwd=settings.BASE_DIR, env=env,
                                        start_new_session=True)
        self.started_at, self.restart_at = time.monotonic(), None

    def exited(self) -> int | None:
        return None if self.process is None else self.process.poll()

    def kill_group(self) -> None:
        if self.process is not None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def schedule_restart(self) -> float:
        """After an exit: kill what is left of its group and pick when to start again."""
        self.kill_group()
        lived = time.monotonic() - self.started_at
        self.quick_exits = self.quick_exits + 1 if lived < QUICK_EXIT_S else 0
        delay = min(MAX_RESTART_DELAY_S, 0.5 * 2 ** self.quick_exits) if self.quick_exits else 0
        self.restart_at = time.monotonic() + delay
        return delay

    def terminate(self) -> None:
        """SIGTERM to the child itself (dramatiq passes it on to its worker process once, so
        the worker stops cleanly instead of being killed by a second signal)."""
        if self.process is not None and self.process.poll() is None:
            try:
                self.process.terminate()
            except ProcessLookupError:
                pass

    def wait_or_kill(self, deadline: float) -> None:
        if self.process is None:
            return
        try:
            self.process.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
        self.kill_group()  # leftovers (a sandbox, a worker that ignored SIGTERM)
        self.process.wait()


class Command(BaseCommand):
    help = "Start the portal: database, Redis, migrations, demo data, ASGI server and workers."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
        parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
        parser.add_argument("--workers", type=int, default=2, help="Dramatiq worker processes")
        parser.add_argument("--threads", type=int, default=2, help="threads per worker process")

    def handle(self, *args: Any, **options: Any) -> None:
        started = time.monotonic()
        self._catch_stop_signals()
        web, workers = self._children(options)
        url = f"http://{options['host']}:{options['port']}/"
        try:
            usernames = self._prepare()
            for child in (web, *workers):
                child.start()
            self._wait_healthy(url, web, workers)
            self._print_welcome(url, usernames, time.monotonic() - started)
            self._supervise([web, *workers])
        except Stop:
            self.stdout.write("\nStopping...")
        finally:
            self._ignore_stop_signals()
            self._stop(web, workers)

    def _catch_stop_signals(self) -> None:
        """Ctrl-C and SIGTERM both stop `up`. SIGINT is set explicitly: started in the
        background (`nohup manage.py up &`) it arrives ignored, and Python then keeps it so."""
        def stop(signum: int, frame: Any) -> None:
            raise Stop(signal.Signals(signum).name)

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)

    @staticmethod
    def _ignore_stop_signals() -> None:
        """A second Ctrl-C must not cut the ordered stop short and leave children running."""
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)

    def _prepare(self) -> tuple[str, ...]:
        """Runtime, migrations, static files and the demo data; returns the demo users."""
        self._ensure_plugin_runtime()
        call_command("migrate", interactive=False, verbosity=0)
        call_command("collectstatic", interactive=False, verbosity=0)
        return demo_data_ensure(password=settings.DEMO_PASSWORD).usernames

    def _ensure_plugin_runtime(self) -> None:
        """Plugins are tested on a runtime of their own (autocoder/runtime): build it when
        missing or out of date (`make run` has usually done so already)."""
        from autocoder.runtime import build, runtime_dir, runtime_problem

        problem = runtime_problem()
        if problem:
            self.stdout.write(f"Building the plugin runtime ({problem})...")
            build.build(runtime_dir())

    @staticmethod
    def _children(options: dict[str, Any]) -> tuple[Child, list[Child]]:
        python = sys.executable
        web = Child("web server", [python, "-m", "daphne", "-b", options["host"], "-p",
                                   str(options["port"]), "autocoder.asgi:application"])
        # One Dramatiq process per worker: dramatiq stops all its worker processes when one
        # dies, so each gets its own parent, which `up` restarts alone.
        worker = [python, "manage.py", "rundramatiq", "--processes", "1",
                  "--threads", str(options["threads"]),
                  "--worker-shutdown-timeout", str(int(WORKER_SHUTDOWN_S * 1000))]
        poll = {"dramatiq_worker_timeout": WORKER_POLL_MS}
        return web, [Child(f"worker {n + 1}", worker, env=poll)
                     for n in range(options["workers"])]

    def _wait_healthy(self, url: str, web: Child, workers: list[Child]) -> None:
        deadline = time.monotonic() + HEALTH_TIMEOUT_S
        while time.monotonic() < deadline:
            if web.exited() is not None:
                raise SystemExit("the web server exited during start-up; see the log above")
            self._restart_exited(workers)
            try:
                with urllib.request.urlopen(f"{url}healthz", timeout=2) as response:  # noqa: S310
                    if response.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(0.5)
        self.stderr.write("the portal did not become healthy in time; `manage.py doctor` says why")

    def _print_welcome(self, url: str, usernames: tuple[str, ...], took_s: float) -> None:
        ready = f"\nAutocoder is running at {url}  (ready in {took_s:.1f}s)"
        self.stdout.write(self.style.SUCCESS(ready))
        self.stdout.write("Demo team 'demo'; log in as any of:")
        for username in usernames:
            self.stdout.write(f"  {username:<10} password: {settings.DEMO_PASSWORD}")
        self._print_model_state(url)
        self.stdout.write("Press Ctrl-C to stop everything.\n")

    def _print_model_state(self, url: str) -> None:
        """Say so when no model works: requests would wait in the queue without a word."""
        from autocoder.installation import fault_of

        fault = fault_of("model")
        if fault is None:
            return
        state = ("No model is set up" if fault.problem == "no model is set up"
                 else f"The model cannot work ({fault.problem})")
        self.stdout.write(self.style.WARNING(
            f"{state}: open {url}settings/model/ as admin, or set LLM_PROVIDER, LLM_BASE_URL "
            "and LLM_MODEL (see docs/llm.md). Until then, requests wait in the queue."))

    def _supervise(self, children: list[Child]) -> None:
        """Until Ctrl-C: start again any child that exited; the others keep running."""
        while True:
            self._restart_exited(children)
            time.sleep(0.25)

    def _restart_exited(self, children: list[Child]) -> None:
        now = time.monotonic()
        for child in children:
            if child.restart_at is not None:
                if now >= child.restart_at:
                    child.start()
                    child.restarts += 1
                    pid = child.process.pid if child.process else "?"
                    self.stderr.write(f"{child.name} started again (pid {pid})")
                continue
            code = child.exited()
            if code is not None:
                delay = child.schedule_restart()
                self.stderr.write(f"{child.name} exited (code {code}); starting it again"
                                  + (f" in {delay:.0f}s" if delay else ""))

    def _stop(self, web: Child, workers: list[Child]) -> None:
        """Web first (no new requests), then the workers (their steps get a few seconds); Redis
        and PostgreSQL stop when this process exits (autocoder.embedded)."""
        started = time.monotonic()
        web.terminate()
        web.wait_or_kill(started + WEB_STOP_S)
        web_s = time.monotonic() - started
        for worker in workers:
            worker.terminate()
        deadline = time.monotonic() + WORKER_STOP_S
        for worker in workers:
            worker.wait_or_kill(deadline)
        self.stdout.write(f"Stopped the web server ({web_s:.1f}s) and the workers "
                          f"({time.monotonic() - started - web_s:.1f}s); stopping Redis and "
                          "PostgreSQL.")
