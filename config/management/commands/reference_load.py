from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from autocoder.reference.loading import load_reference, reference_path


class Command(BaseCommand):
    help = ("Load the plugin runtime's API reference (reference.json, written when the runtime "
            "is built) into the database for the prompts; does nothing for versions already "
            "loaded. See docs/engine.md, 'Reference docs'.")

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--file", type=Path, default=None,
                            help="reference.json to load (default: the runtime's)")
        parser.add_argument("--force", action="store_true", help="load again even if loaded")
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        path = options["file"] or reference_path()
        if not path.exists():
            raise CommandError(f"no reference at {path}: build the plugin runtime first "
                               "(`python -m autocoder.runtime.build`)")
        report = load_reference(path=path, force=options["force"])
        if options["json"]:
            self.stdout.write(json.dumps({"loaded": report.loaded, "already": report.already,
                                          "entries": report.entries,
                                          "embedded": report.embedded,
                                          "seconds": round(report.seconds, 2)}))
            return
        if report.loaded:
            self.stdout.write(self.style.SUCCESS(
                f"loaded {report.entries} entries ({', '.join(report.loaded)}) in "
                f"{report.seconds:.1f} s; {report.embedded} embedded now"))
        if report.already:
            self.stdout.write(f"already loaded: {', '.join(report.already)}")
