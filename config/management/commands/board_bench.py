from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from config.benchmarks.board import board_bench


class Command(BaseCommand):
    help = ("Time the team board with N projects (created in a transaction that is rolled back): "
            "p50/p95 milliseconds and the number of SQL queries per request.")

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--projects", type=int, default=500)
        parser.add_argument("--requests", type=int, default=30, help="timed requests")
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["projects"] < 1 or options["requests"] < 1:
            raise CommandError("--projects and --requests must be at least 1.")
        result = board_bench(projects=options["projects"], requests=options["requests"])
        if options["json"]:
            self.stdout.write(json.dumps(result.as_dict()))
            return
        self.stdout.write(f"board with {result.projects} projects ({result.cards} cards shown), "
                          f"{result.requests} requests: p50 {result.p50_ms} ms, "
                          f"p95 {result.p95_ms} ms, max {result.max_ms} ms "
                          f"(CPU p95 {result.cpu_p95_ms} ms), "
                          f"{result.queries} SQL queries per request")
