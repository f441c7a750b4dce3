from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from config.benchmarks.insights import insights_bench


class Command(BaseCommand):
    help = ("Time the team page \"How generation is going\" with N runs over a year (created in "
            "a transaction that is rolled back): p50/p95 milliseconds and SQL queries.")

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--runs", type=int, default=10_000)
        parser.add_argument("--requests", type=int, default=30, help="timed requests")
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["runs"] < 1 or options["requests"] < 1:
            raise CommandError("--runs and --requests must be at least 1.")
        result = insights_bench(runs=options["runs"], requests=options["requests"])
        if options["json"]:
            self.stdout.write(json.dumps(result.as_dict()))
            return
        self.stdout.write(f"how generation is going, {result.runs} runs over a year, "
                          f"{result.requests} requests: p50 {result.p50_ms} ms, "
                          f"p95 {result.p95_ms} ms, max {result.max_ms} ms "
                          f"(CPU p95 {result.cpu_p95_ms} ms), {result.queries} SQL queries "
                          "per request")
