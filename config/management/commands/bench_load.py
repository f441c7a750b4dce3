"""`manage.py bench_load [--url URL] [--page board|catalogue|all]`: throughput, p50, p95 and
errors of a running portal under N concurrent logged-in clients (config/benchmarks/load.py)."""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from config.benchmarks.load import (
    PAGES,
    SEED_PLUGINS,
    SEED_PROJECTS,
    LoginFailed,
    run_load,
    seed_sample_data,
)


class Command(BaseCommand):
    help = ("Load a running portal (`make run`) with concurrent clients and print requests per "
            "second, p50 and p95 latency and errors for the board and the catalogue search.")

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--url", default="http://127.0.0.1:8000/")
        parser.add_argument("--page", choices=[*PAGES, "all"], default="all")
        parser.add_argument("--clients", type=int, default=20)
        parser.add_argument("--seconds", type=float, default=30.0)
        parser.add_argument("--team", default="demo")
        parser.add_argument("--user", default="reviewer")
        parser.add_argument("--password", default=settings.DEMO_PASSWORD)
        parser.add_argument("--json", action="store_true", help="one JSON object per page")
        parser.add_argument(
            "--seed", action="store_true",
            help=f"first fill the team's board up to {SEED_PROJECTS} sample projects "
                 f"(bench-plugin-N) and the catalogue up to {SEED_PLUGINS} sample plugins, in "
                 "the database this command uses, so figures compare with docs/operating.md")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["clients"] < 1 or options["seconds"] <= 0:
            raise CommandError("--clients and --seconds must be positive")
        pages = PAGES if options["page"] == "all" else (options["page"],)
        if options["seed"]:
            try:
                added = seed_sample_data(team_slug=options["team"])
            except LookupError as error:
                raise CommandError(str(error)) from error
            self.stderr.write(f"added {added.projects} sample projects and {added.plugins} "
                              "sample plugins")
        for page in pages:
            try:
                result = run_load(base_url=options["url"], page=page, team=options["team"],
                                  clients=options["clients"], seconds=options["seconds"],
                                  username=options["user"], password=options["password"],
                                  progress=self.stderr.write)
            except LoginFailed as error:
                raise CommandError(
                    f"{error}; is the portal running at {options['url']}?") from error
            figures = result.as_dict()
            if options["json"]:
                self.stdout.write(json.dumps(figures))
                continue
            self.stdout.write(
                f"{page:<10} {figures['requests']} requests in {figures['seconds']} s: "
                f"{figures['throughput_rps']} req/s, p50 {figures['p50_ms']} ms, "
                f"p95 {figures['p95_ms']} ms, errors {figures['errors']}")
            for sample in figures["error_samples"]:  # type: ignore[attr-defined]
                self.stdout.write(f"  e.g. {sample}")
