from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from autocoder.reference.evaluation import TOP, evaluate
from autocoder.reference.loading import load_reference, reference_path


class Command(BaseCommand):
    help = (f"How many held-out API questions have the right reference entry in the top {TOP} "
            "(autocoder/reference/questions.py). See docs/engine.md, 'Reference docs'.")

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        if not reference_path().exists():
            raise CommandError(f"no reference at {reference_path()}: build the plugin runtime "
                               "first (`python -m autocoder.runtime.build`)")
        load_reference()  # what is not loaded yet (nothing, usually)
        report = evaluate()
        if options["json"]:
            self.stdout.write(json.dumps(report.as_dict()))
            return
        for result in report.results:
            mark = f"#{result['rank']}" if result["rank"] else "miss"
            self.stdout.write(f"{mark:>5}  {result['question']}  ->  "
                              f"{', '.join(result['top'][:3])}")
        self.stdout.write(f"{report.answered} of {report.total} in the top {TOP} "
                          f"(p50 {report.p50_ms():.0f} ms per question)")
