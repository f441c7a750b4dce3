"""`manage.py up`: the whole stack in one command (what `make run` calls)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand

from projects.services import demo_data_ensure

HEALTH_TIMEOUT_S = 120


class Command(BaseCommand):
    help = "Start the portal: database, Redis, migrations, demo data, ASGI server and workers."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
        parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
        parser.add_argument("--workers", type=int, default=2, help="Dramatiq worker processes")
        parser.add_argument("--threads", type=int, default=2, help="threads per worker process")

    def handle(self, *args: Any, **options: Any) -> None:
        started = time.monotonic()
        self._ensure_plugin_runtime()
        call_command("migrate", interactive=False, verbosity=0)
        call_command("collectstatic", interactive=False, verbosity=0)
        demo = demo_data_ensure(password=settings.DEMO_PASSWORD)
        children = self._start_children(options)
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        url = f"http://{options['host']}:{options['port']}/"
        try:
            self._wait_healthy(url, children)
            self._print_welcome(url, demo.usernames, time.monotonic() - started)
            self._supervise(children)
        except KeyboardInterrupt:
            self.stdout.write("\nStopping...")
        finally:
            self._stop(children)

    def _ensure_plugin_runtime(self) -> None:
        """Plugins are tested on a runtime of their own (autocoder/runtime): build it when
        missing or out of date (`make run` has usually done so already)."""
        from autocoder.runtime import build, runtime_dir, runtime_problem

        problem = runtime_problem()
        if problem:
            self.stdout.write(f"Building the plugin runtime ({problem})...")
            build.build(runtime_dir())

    def _start_children(self, options: dict[str, Any]) -> list[subprocess.Popen[bytes]]:
        python = sys.executable
        web = [python, "-m", "daphne", "-b", options["host"], "-p", str(options["port"]),
               "autocoder.asgi:application"]
        workers = [python, "manage.py", "rundramatiq", "--processes", str(options["workers"]),
                   "--threads", str(options["threads"])]
        # Own process groups: a Ctrl-C reaches us once, and we stop the children in order.
        return [subprocess.Popen(cmd, cwd=settings.BASE_DIR, start_new_session=True)
                for cmd in (web, workers)]

    def _wait_healthy(self, url: str, children: list[subprocess.Popen[bytes]]) -> None:
        deadline = time.monotonic() + HEALTH_TIMEOUT_S
        while time.monotonic() < deadline:
            if any(child.poll() is not None for child in children):
                raise SystemExit("a server process exited during start-up; see the log above")
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

    def _supervise(self, children: list[subprocess.Popen[bytes]]) -> None:
        while all(child.poll() is None for child in children):
            time.sleep(1)
        self.stderr.write("a server process exited; stopping the others")

    def _stop(self, children: list[subprocess.Popen[bytes]]) -> None:
        for child in children:
            if child.poll() is None:
                os.killpg(child.pid, signal.SIGTERM)
        for child in children:
            try:
                child.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(child.pid, signal.SIGKILL)
