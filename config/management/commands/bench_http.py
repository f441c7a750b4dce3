from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand

from config.benchmarks import http_channel as bench


class Command(BaseCommand):
    help = ("What one api.http request costs over the same request made directly by the host: "
            "a plugin in the real sandbox makes N requests to a loopback HTTP server through "
            "the call's channel (p50 and p95 overhead per request; goal p50 <= 5 ms).")

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--requests", type=int, default=100,
                            help="requests per round (3 rounds, each way)")
        parser.add_argument("--urllib", action="store_true",
                            help="carry the requests out with a minimal urllib request rather"
                                 " than the HTTP gate (the channel's cost alone)")
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        figures = bench.measure(options["requests"], urllib_only=options["urllib"])
        if options["json"]:
            self.stdout.write(json.dumps(figures))
            return
        self.stdout.write(
            f"api.http overhead per request (the plugin's wait minus the handler's time): p50 "
            f"{figures['overhead_p50_ms']} ms, p95 {figures['overhead_p95_ms']} ms "
            f"({figures['requests']} requests each way; goal p50 <= {figures['goal_p50_ms']} ms)")
        self.stdout.write(
            f"  through the channel: p50 {figures['channel_p50_ms']} ms, p95 "
            f"{figures['channel_p95_ms']} ms; direct: p50 {figures['direct_p50_ms']} ms, p95 "
            f"{figures['direct_p95_ms']} ms")
        self.stdout.write(f"  requests carried out by {figures['handled_by']}")
