"""`manage.py lessons_bench --n N --queries Q [--json]`: HNSW latency and recall@10;
with `--teams T`, searches filtered to one team, per team-size band, old server beside new."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from autocoder.lessons.models import HNSW_EF_CONSTRUCTION, HNSW_M
from autocoder.lessons.selectors import HNSW_EF_SEARCH
from config.benchmarks.lessons import BenchConfig, run_bench
from config.benchmarks.lessons_filtered import FilteredConfig, run_filtered


class Command(BaseCommand):
    help = ("Measure lesson retrieval: HNSW query latency and recall@10 against exact search on "
            "N synthetic clustered lessons in a scratch table, index build time, and the "
            "embedder's throughput.")

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--n", type=int, default=10_000, help="lessons in the scratch table")
        parser.add_argument("--queries", type=int, default=200, help="queries to time")
        parser.add_argument("--m", type=int, default=HNSW_M, help="HNSW m")
        parser.add_argument("--ef-construction", type=int, default=HNSW_EF_CONSTRUCTION)
        parser.add_argument("--ef-search", type=int, default=HNSW_EF_SEARCH)
        parser.add_argument("--clusters", type=int, default=None,
                            help="topic clusters (default: n/300, between 8 and 500)")
        parser.add_argument("--embed-texts", type=int, default=512,
                            help="texts to embed for the throughput figure (0 skips it)")
        parser.add_argument("--seed", type=int, default=7)
        parser.add_argument("--json", action="store_true", help="print one JSON object")
        parser.add_argument("--teams", type=int, default=0,
                            help="filtered mode: spread the lessons over this many teams "
                                 "(1 to 50,000 lessons each) and search one team at a time, "
                                 "on this server and on the previous one (PostgreSQL 16)")
        parser.add_argument("--queries-per-band", type=int, default=50,
                            help="filtered mode: queries per team-size band")
        parser.add_argument("--halfvec", action="store_true",
                            help="filtered mode: also a half-precision index (recall, size)")
        parser.add_argument("--no-old-server", action="store_true",
                            help="filtered mode: skip the previous server")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["teams"]:
            self._filtered(options)
            return
        config = BenchConfig(
            n=options["n"], queries=options["queries"], m=options["m"],
            ef_construction=options["ef_construction"], ef_search=options["ef_search"],
            clusters=options["clusters"], embed_texts=options["embed_texts"],
            seed=options["seed"])
        progress = (lambda _: None) if options["json"] else (lambda m: self.stderr.write(m))
        try:
            result = run_bench(config, progress=progress)
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        if options["json"]:
            self.stdout.write(json.dumps(result.as_dict()))
            return
        for key, value in result.as_dict().items():
            self.stdout.write(f"{key:<16} {value}")

    def _filtered(self, options: dict[str, Any]) -> None:
        config = FilteredConfig(
            n=options["n"], teams=options["teams"], queries_per_band=options["queries_per_band"],
            ef_search=options["ef_search"], halfvec=options["halfvec"],
            old_server=not options["no_old_server"], seed=options["seed"])
        try:
            result = run_filtered(config, progress=lambda m: self.stderr.write(m))
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(json.dumps(result, indent=None if options["json"] else 2))
