"""`python manage.py quality_bench [--runs N] [--json]`: the quality pipeline's cost per
candidate on a plugin of about 300 lines under the basic strategy (autocoder/quality/bench.py;
docs/engine.md, "The quality pipeline")."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand

from autocoder.quality.strategies import STRATEGIES


class Command(BaseCommand):
    help = "Time the quality pipeline per stage (p50 seconds) on a ~300-line plugin."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--runs", type=int, default=5, help="runs (default: %(default)s)")
        parser.add_argument("--strategy", choices=sorted(STRATEGIES), default="basic")
        parser.add_argument("--json", action="store_true",
                            help="print one JSON object on the last line")

    def handle(self, *args: Any, **options: Any) -> None:
        from autocoder.quality.bench import bench

        result = bench(max(1, options["runs"]), strategy=options["strategy"])
        if options["json"]:
            self.stdout.write(json.dumps(result))
            return
        self.stdout.write(f"{result['runs']} run(s), {result['strategy']}, a plugin of "
                          f"{result['plugin_lines']} lines of Python")
        for stage, seconds in result["p50_s"].items():
            self.stdout.write(f"  {stage:<12} p50 {seconds:6.2f} s")
        verdict = "within" if result["within_goal"] else "OVER"
        self.stdout.write(f"  total        p50 {result['p50_total_s']:6.2f} s "
                          f"(max {result['max_total_s']:.2f} s; {verdict} the goal of "
                          f"{result['goal_s']:.0f} s); scores {result['scores']}")
