from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from autocoder.sandbox.types import SandboxError
from config.benchmarks import sandbox as bench
from config.benchmarks.sandbox import StartupFigures


class Command(BaseCommand):
    help = ("Median wall time of `python -S -I -c pass` inside the sandbox (bwrap, Docker with "
            "runc, Docker with runsc) and outside it, and of the safety gate on a 500-line "
            "plugin.")

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--runs", type=int, default=30)
        parser.add_argument("--backends", default="bwrap",
                            help=f"comma-separated, of {', '.join(bench.BACKENDS)} "
                                 "(Docker ones need the engine and the sandbox image)")
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        names = [name.strip() for name in options["backends"].split(",") if name.strip()]
        unknown = [name for name in names if name not in bench.BACKENDS]
        if unknown or not names:
            raise CommandError(f"unknown backend {', '.join(unknown) or '(none)'}; "
                               f"expected some of {', '.join(bench.BACKENDS)}")
        try:
            results = {name: bench.startup(options["runs"], name) for name in names}
        except SandboxError as error:
            raise CommandError(f"the sandbox could not run: {error}") from error
        # the bwrap figures stay at the top level, as before --backends
        figures = {**results.get("bwrap", {}), "backends": results,
                   **bench.gate(max(5, options["runs"]))}
        if options["json"]:
            self.stdout.write(json.dumps(figures))
            return
        for name, startup in results.items():
            self._startup(name, startup)
        self.stdout.write(f"safety gate on a {figures['scan_lines']}-line plugin: "
                          f"{figures['scan_ms']} ms median wall ({figures['scan_cpu_ms']} ms CPU), "
                          f"verdict {figures['scan_verdict']}")

    def _startup(self, name: str, figures: StartupFigures) -> None:
        self.stdout.write(
            f"{name}: python -S -I -c pass: outside {figures['outside_ms']} ms, "
            f"inside (next sandbox prepared) {figures['inside_ms']} ms "
            f"(median wall time of {figures['runs']}), "
            f"ratio {figures['ratio']}, added {figures['added_ms']} ms")
        self.stdout.write(f"  fastest: outside {figures['outside_min_ms']} ms, "
                          f"inside {figures['inside_min_ms']} ms")
        self.stdout.write(
            f"  cold (nothing prepared, a worker thread's first run): {figures['cold_ms']} ms "
            f"median, ratio {figures['cold_ratio']}, added "
            f"{round(figures['cold_ms'] - figures['outside_ms'], 2)} ms, "
            f"fastest {figures['cold_min_ms']} ms")
