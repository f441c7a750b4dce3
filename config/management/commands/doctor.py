from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand

from config import health
from config.checks import secret_key_health


class Command(BaseCommand):
    help = "Report, for each part of the stack, whether it works and what to do if not."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        secrets = secret_key_health()
        results = [*health.run_checks(), secrets]
        if options["json"]:
            self.stdout.write(json.dumps({c.name: c.as_dict() for c in results}))
        else:
            for check in results:
                mark = self.style.SUCCESS("ok  ") if check.ok else self.style.ERROR("FAIL")
                self.stdout.write(f"{mark} {check.name:<9} {check.detail}")
                if not check.ok:
                    self.stdout.write(f"       -> {check.hint}")
        if not health.service_healthy(results) or not secrets.ok:
            raise SystemExit(1)
