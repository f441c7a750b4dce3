from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from autocoder.safety import scan_directory


class Command(BaseCommand):
    help = ("Scan a plugin directory with the safety gate (AST policy + bandit). "
            "Exits 0 on pass, 1 on review or block.")

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("dir", type=Path, help="plugin directory (reads plugin.toml)")
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            report = scan_directory(options["dir"])
        except FileNotFoundError as exc:
            raise CommandError(str(exc)) from exc
        if options["json"]:
            self.stdout.write(json.dumps(report.as_dict()))
        else:
            for finding in report.findings:
                self.stdout.write(f"{finding.severity:<6} {finding.file}:{finding.line} "
                                  f"[{finding.tool}:{finding.rule}] {finding.message}")
            style = {"pass": self.style.SUCCESS, "review": self.style.WARNING}.get(
                report.verdict, self.style.ERROR)
            self.stdout.write(style(f"verdict: {report.verdict} "
                                    f"({len(report.findings)} finding(s))"))
        if report.verdict != "pass":
            raise SystemExit(1)
