from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand

from autocoder.benchmarks import invoke as bench


class Command(BaseCommand):
    help = ("Invocation overhead of an activated plugin over the plugin's own work (p50/p95, "
            "a trivial plugin, the sandbox prepared), on the real sandbox.")

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--mode", choices=sorted(bench.MODES), default="overhead",
                            help="what to measure (autocoder/benchmarks/invoke.py, MODES)")
        parser.add_argument("--runs", type=int, default=50)
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        figures = bench.MODES[options["mode"]](max(5, options["runs"]))
        if options["json"]:
            self.stdout.write(json.dumps(figures))
            return
        self._overhead(figures)

    def _overhead(self, figures: dict[str, Any]) -> None:
        self.stdout.write(
            f"invocation overhead over the plugin's own work, next sandbox prepared: "
            f"p50 {figures['overhead_p50_ms']} ms, p95 {figures['overhead_p95_ms']} ms, "
            f"fastest {figures['overhead_min_ms']} ms ({figures['runs']} calls; goal p50 <= "
            f"{figures['goal_p50_ms']} ms)")
        self.stdout.write(
            f"  whole call: p50 {figures['call_p50_ms']} ms, p95 {figures['call_p95_ms']} ms")
        self.stdout.write(
            f"  back to back (each call may wait for its sandbox's preparation): overhead p50 "
            f"{figures['back_to_back_overhead_p50_ms']} ms, "
            f"p95 {figures['back_to_back_overhead_p95_ms']} ms")
