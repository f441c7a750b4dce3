from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand

from autocoder.benchmarks import sandbox as bench


class Command(BaseCommand):
    help = ("Median wall time of `python -S -I -c pass` inside the bwrap sandbox and outside "
            "it, and of the safety gate on a 500-line plugin.")

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--runs", type=int, default=30)
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        figures = {**bench.startup(options["runs"]), **bench.gate(max(5, options["runs"]))}
        if options["json"]:
            self.stdout.write(json.dumps(figures))
            return
        self.stdout.write(
            f"python -S -I -c pass: outside {figures['outside_ms']} ms, "
            f"inside bwrap (next sandbox prepared) {figures['inside_ms']} ms "
            f"(median wall time of {figures['runs']}), "
            f"ratio {figures['ratio']}, added {figures['added_ms']} ms")
        self.stdout.write(f"  fastest: outside {figures['outside_min_ms']} ms, "
                          f"inside {figures['inside_min_ms']} ms")
        self.stdout.write(
            f"  cold (nothing prepared, a worker thread's first run): {figures['cold_ms']} ms "
            f"median, ratio {figures['cold_ratio']}, fastest {figures['cold_min_ms']} ms")
        self.stdout.write(f"safety gate on a {figures['scan_lines']}-line plugin: "
                          f"{figures['scan_ms']} ms median wall ({figures['scan_cpu_ms']} ms CPU), "
                          f"verdict {figures['scan_verdict']}")
