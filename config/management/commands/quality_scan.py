"""`python manage.py quality_scan DIR [--strategy basic|comprehensive|stress] [--json]`: the
quality pipeline on a plugin folder, as `safety_scan` runs the gate (docs/engine.md, "The
quality pipeline")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from autocoder.quality.strategies import STRATEGIES

_SKIPPED_DIRS = {"__pycache__", ".git", ".venv", ".mypy_cache", ".ruff_cache", ".pytest_cache"}


def read_plugin_dir(root: Path) -> dict[str, str | bytes]:
    """The plugin folder's files as the pipeline takes them (text where it decodes)."""
    if not (root / "plugin.toml").is_file():
        raise FileNotFoundError(f"{root} has no plugin.toml")
    files: dict[str, str | bytes] = {}
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if not path.is_file() or _SKIPPED_DIRS & set(relative.parts) or path.suffix == ".pyc":
            continue
        data = path.read_bytes()
        try:
            files[relative.as_posix()] = data.decode("utf-8")
        except UnicodeDecodeError:
            files[relative.as_posix()] = data
    return files


class Command(BaseCommand):
    help = ("Run the quality pipeline (tests, coverage, lint, types, complexity, performance, "
            "docs) on a plugin directory and print every stage and the score.")

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("dir", type=Path, help="plugin directory (with plugin.toml)")
        parser.add_argument("--strategy", choices=sorted(STRATEGIES), default="basic",
                            help="how hard it is tested (default: %(default)s)")
        parser.add_argument("--json", action="store_true",
                            help="print one JSON object on the last line")

    def handle(self, *args: Any, **options: Any) -> None:
        from autocoder.quality.pipeline import run_quality

        try:
            files = read_plugin_dir(options["dir"])
        except (FileNotFoundError, OSError) as exc:
            raise CommandError(str(exc)) from exc
        report = run_quality(files, strategy=options["strategy"])
        if options["json"]:
            self.stdout.write(json.dumps(report.as_dict()))
            return
        for stage in report.stages:
            mark = self.style.SUCCESS("pass") if stage.passed else self.style.ERROR("FAIL")
            self.stdout.write(f"{mark} {stage.stage:<12} {stage.seconds:6.2f} s  "
                              f"{len(stage.findings)} finding(s)")
            for finding in stage.findings:
                where = f"{finding.where}: " if finding.where else ""
                self.stdout.write(f"       {where}{finding.message}")
        parts = ", ".join(f"{name} {value:.1f}" for name, value in report.parts.items())
        if report.fixed_files:
            self.stdout.write(f"safe fixes (format, import order) for: "
                              f"{', '.join(sorted(report.fixed_files))}")
        self.stdout.write(f"score {report.score}/100 ({report.strategy}): {parts}")
