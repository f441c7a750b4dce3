"""`manage.py marketplace_bench --plugins 5000 [--json]`: catalogue search and /simple/<name>/
latency on a seeded catalogue, inside a transaction that is rolled back afterwards."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from config.benchmarks.marketplace import bench_run


class Command(BaseCommand):
    help = ("Seed N plugins (rolled back afterwards) and time the catalogue search and the "
            "package index's project page; prints p50/p95 in milliseconds.")

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--plugins", type=int, default=5000)
        parser.add_argument("--searches", type=int, default=300)
        parser.add_argument("--index-requests", type=int, default=300)
        parser.add_argument("--seed", type=int, default=7)
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["plugins"] < 10:
            raise CommandError("--plugins must be at least 10")
        progress = (lambda _: None) if options["json"] else (lambda m: self.stderr.write(m))
        result = bench_run(plugins=options["plugins"], searches=options["searches"],
                           index_requests=options["index_requests"], seed=options["seed"],
                           progress=progress)
        if options["json"]:
            self.stdout.write(json.dumps(result))
            return
        self.stdout.write(f"plugins seeded        {result['plugins']} (catalogue"
                          f" {result['catalogue_total']}, {result['seed_s']} s to seed)")
        for name, figures in result["search"].items():
            if isinstance(figures, dict):
                self.stdout.write(f"search {name:<15} p50 {figures['p50_ms']} ms,"
                                  f" p95 {figures['p95_ms']} ms")
        index = result["index"]
        self.stdout.write(f"/simple/<name>/       p50 {index['p50_ms']} ms,"
                          f" p95 {index['p95_ms']} ms")
