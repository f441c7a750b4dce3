"""`manage.py up`: the whole stack in one command (what `make run` calls).

`up` supervises its children (autocoder/supervisor.py): several ASGI processes on one port
and one Dramatiq process per worker (`--processes 1`, so one dead worker takes nobody else
down). A child that exits is started again within seconds; the others go on serving. Ctrl-C
or SIGTERM stops everything in order (web, then workers, then Redis and PostgreSQL).
"""

from __future__ import annotations

import io
import os
import sys
import time
import urllib.error
import urllib.request
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from autocoder import metrics, start_gate
from autocoder.supervisor import (
    Child,
    Stop,
    catch_stop_signals,
    ignore_stop_signals,
    listening_sockets,
    restart_exited,
    stop_all,
    web_children,
    web_process_count,
)
from teams.services import demo_data_ensure

HEALTH_TIMEOUT_S = 120
WEB_STOP_S = 1.5
# Dramatiq lets a step finish this long on stop; a step cut short is taken over by the next
# start's watchdog (its claim names a worker whose heartbeat is gone).
WORKER_SHUTDOWN_S = 2.0
WORKER_STOP_S = WORKER_SHUTDOWN_S + 2.5
# How long an idle worker waits for a message before it looks at its stop flag again
# (dramatiq's default, 1 s, costs a clean stop about 2 s).
WORKER_POLL_MS = "500"


class Command(BaseCommand):
    help = "Start the portal: database, Redis, migrations, demo data, ASGI server and workers."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
        parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
        parser.add_argument("--web", type=int, default=0,
                            help="ASGI server processes (default: WEB_PROCESSES, or cores + 1)")
        parser.add_argument("--workers", type=int, default=2, help="Dramatiq worker processes")
        parser.add_argument("--threads", type=int, default=2, help="threads per worker process")

    def handle(self, *args: Any, **options: Any) -> None:
        started = time.monotonic()
        catch_stop_signals()
        try:
            sockets = listening_sockets(options["host"], options["port"],
                                        options["web"] or web_process_count())
        except OSError as error:
            raise CommandError(str(error)) from error
        web, workers = web_children(sockets), self._workers(options)
        # The children boot while the database is migrated, and wait at this gate until it is
        # (autocoder/start_gate.py): a first start no longer pays for both in turn.
        gate = settings.VAR_DIR / "run" / f"start-gate-{os.getpid()}"
        for child in (*web, *workers):
            child.env = {**(child.env or {}), **start_gate.gate_environment(gate)}
        url = f"http://{options['host']}:{options['port']}/"
        try:
            self._before_children()
            for child in (*web, *workers):
                child.start()
            self._prepare()
            start_gate.gate_open(gate)
            # The children finish booting meanwhile; `ready` is said once the users exist.
            usernames = demo_data_ensure(password=settings.DEMO_PASSWORD).usernames
            self._wait_healthy(url, web, workers)
            self._print_welcome(url, usernames, time.monotonic() - started)
            self._supervise([*web, *workers])
        except Stop:
            self.stdout.write("\nStopping...")
        finally:
            ignore_stop_signals()
            self._stop(web, workers, gate_opened=gate.exists())
            gate.unlink(missing_ok=True)
            for sock in sockets:
                sock.close()

    def _before_children(self) -> None:
        """What the children need before they start: the static files (WhiteNoise lists them
        when a web process loads) and a fresh count of processes for /metrics."""
        metrics.forget_processes(settings.METRICS_DIR)
        self._ensure_plugin_runtime()
        call_command("collectstatic", interactive=False, verbosity=0)

    def _prepare(self) -> None:
        """What must be done before a child touches the database: migrations, and stored
        secrets sealed under the current key."""
        call_command("migrate", interactive=False, verbosity=0)
        self._reseal_under_current_key()

    def _reseal_under_current_key(self) -> None:
        """Stored secrets that open only with a fallback key are sealed again under the
        current one (step 4 of docs/operating.md, "Rotating the secret key"); so are those of
        an installation that ran on the old built-in key, which is public, and now has a key
        of its own in var/secret_key."""
        from autocoder import secret_key
        from autocoder.resealing import sealed_values_reseal

        rotated = sealed_values_reseal().resealed
        if rotated:
            self.stdout.write(f"Sealed {rotated} stored secret(s) again under the current "
                              "secret key (they opened only with DJANGO_SECRET_KEY_FALLBACKS).")
        if secret_key.configured_key():
            return
        public = sealed_values_reseal(old_keys=[secret_key.OLD_DEVELOPMENT_DEFAULT]).resealed
        if public:
            self.stdout.write(self.style.WARNING(
                f"Sealed {public} stored secret(s) again under this installation's own key "
                f"({secret_key.key_file()}); they were sealed under the old built-in key, which "
                "is public: replace those API keys and secrets at their providers if a copy of "
                "the database could have been seen (docs/operating.md, \"The secret key\")."))

    def _ensure_plugin_runtime(self) -> None:
        """Plugins are tested on a runtime of their own (autocoder/runtime): build it when
        missing or out of date (`make run` has usually done so already)."""
        from autocoder.runtime import build, runtime_dir, runtime_problem

        problem = runtime_problem()
        if problem:
            self.stdout.write(f"Building the plugin runtime ({problem})...")
            build.build(runtime_dir())

    @staticmethod
    def _workers(options: dict[str, Any]) -> list[Child]:
        # One Dramatiq process per worker: dramatiq stops all its worker processes when one
        # dies, so each gets its own parent, which `up` restarts alone. The command is what
        # `manage.py rundramatiq` runs, started directly: rundramatiq would load Django only to
        # list the task modules and replace itself with this (a second of CPU per worker).
        from django_dramatiq.management.commands.rundramatiq import Command as RunDramatiq

        worker = [sys.executable, "-m", "dramatiq", "--path", str(settings.BASE_DIR),
                  "--processes", "1", "--threads", str(options["threads"]),
                  "--worker-shutdown-timeout", str(int(WORKER_SHUTDOWN_S * 1000)),
                  *RunDramatiq(stdout=io.StringIO()).discover_tasks_modules()]
        poll = {"dramatiq_worker_timeout": WORKER_POLL_MS}
        return [Child(f"worker {n + 1}", worker, env=poll) for n in range(options["workers"])]

    def _wait_healthy(self, url: str, web: list[Child], workers: list[Child]) -> None:
        deadline = time.monotonic() + HEALTH_TIMEOUT_S
        while time.monotonic() < deadline:
            if all(child.exited() is not None for child in web):
                raise SystemExit("the web server exited during start-up; see the log above")
            restart_exited(workers, self.stderr.write)
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
        """Say so when no model works: requests would wait in the queue without a word. A
        model the environment sets is called once here, as the Model page calls one before it
        saves it (docs/llm.md, "A model that does not answer")."""
        from autocoder.installation import fault_of
        from autocoder.llm.readiness import model_start_check

        fault = fault_of("model")
        if fault is None:
            checked = model_start_check()
            if checked is not None and checked.ok:
                self.stdout.write(f"Model (set in the environment): {checked.detail}.")
            elif checked is not None:
                self.stdout.write(self.style.WARNING(
                    f"The model set in the environment does not answer: {checked.detail} To "
                    f"fix it: {checked.fix}. Until it answers, new requests wait in the queue "
                    "(held) and go on by themselves once it does; /healthz and the admins' "
                    "banner say so."))
            return
        state = ("No model is set up" if fault.problem == "no model is set up"
                 else f"The model cannot work ({fault.problem})")
        self.stdout.write(self.style.WARNING(
            f"{state}: open {url}settings/model/ as admin, or set LLM_PROVIDER, LLM_BASE_URL "
            "and LLM_MODEL (see docs/llm.md). Until then, requests wait in the queue."))

    def _supervise(self, children: list[Child]) -> None:
        """Until Ctrl-C: start again any child that exited; the others keep running."""
        while True:
            restart_exited(children, self.stderr.write)
            time.sleep(0.25)

    def _stop(self, web: list[Child], workers: list[Child], *, gate_opened: bool) -> None:
        """Web first (no new requests), then the workers (their steps get a few seconds); Redis
        and PostgreSQL stop when this process exits (autocoder.embedded). Children still
        waiting at the start gate have nothing to finish: they are killed at once."""
        started = time.monotonic()
        if not gate_opened:
            for child in (*web, *workers):
                child.kill_group()
        stop_all(web, WEB_STOP_S)
        web_s = time.monotonic() - started
        stop_all(workers, WORKER_STOP_S)
        self.stdout.write(f"Stopped the web server ({web_s:.1f}s) and the workers "
                          f"({time.monotonic() - started - web_s:.1f}s); stopping Redis and "
                          "PostgreSQL.")
