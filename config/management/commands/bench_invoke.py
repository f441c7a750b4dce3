from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from config.benchmarks import invoke as bench
from config.benchmarks.invoke import OverheadFigures
from config.benchmarks.tools_api import LoadFigures, api_load, api_seed
from config.benchmarks.tools_mcp import PROTOCOLS, mcp_load, mcp_seed


class Command(BaseCommand):
    help = ("What invoking an activated plugin costs: --mode overhead (the invocation's "
            "overhead over the plugin's own work, on the real sandbox), --mode api (the HTTP "
            "API's throughput with concurrent clients against a running portal) or --mode mcp "
            "(the same over MCP, with the SDK's client).")

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--mode", choices=[*sorted(bench.MODES), "api", "mcp"],
                            default="overhead", help="what to measure (config/benchmarks/"
                                                     "invoke.py, tools_api.py, tools_mcp.py)")
        parser.add_argument("--runs", type=int, default=50, help="overhead: calls timed")
        parser.add_argument("--url", default="http://127.0.0.1:8000/",
                            help="api, mcp: the running portal")
        parser.add_argument("--clients", type=int, default=20, help="api, mcp: concurrent clients")
        parser.add_argument("--seconds", type=float, default=30.0, help="api, mcp: how long")
        parser.add_argument("--rate", type=float, default=None,
                            help="api, mcp: the calls per second the clients start together "
                                 "(default: each client calls again as soon as it is answered)")
        parser.add_argument("--team", default="demo", help="api, mcp: the team that uses the tool")
        parser.add_argument("--admin", default="admin",
                            help="api, mcp: an admin of the team, who publishes and activates the "
                                 "echo plugin and makes the token (first run)")
        parser.add_argument("--protocol", choices=PROTOCOLS, default="legacy",
                            help="mcp: the initialize handshake (legacy) or 2026-07-28")
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["mode"] in ("api", "mcp"):
            figures = self._api(options)
            if options["json"]:
                self.stdout.write(json.dumps(figures))
            else:
                self._api_words(figures)
            return
        overhead = bench.MODES[options["mode"]](max(5, options["runs"]))
        if options["json"]:
            self.stdout.write(json.dumps(overhead))
        else:
            self._overhead(overhead)

    def _api(self, options: dict[str, Any]) -> LoadFigures:
        if options["clients"] < 1 or options["seconds"] <= 0:
            raise CommandError("--clients must be at least 1 and --seconds above 0.")
        if options["rate"] is not None and options["rate"] <= 0:
            raise CommandError("--rate must be above 0 calls per second.")
        try:
            if options["mode"] == "mcp":
                token = mcp_seed(team_slug=options["team"], admin_username=options["admin"])
            else:
                plugin, token = api_seed(team_slug=options["team"],
                                         admin_username=options["admin"])
        except Exception as error:
            raise CommandError(f"could not set up the echo tool in team {options['team']!r} "
                               f"as {options['admin']!r}: {error}") from error
        if options["mode"] == "mcp":
            return mcp_load(url=options["url"], token=token, team_slug=options["team"],
                            clients=options["clients"], seconds=options["seconds"],
                            protocol=options["protocol"], rate=options["rate"])
        return api_load(url=options["url"], token=token, team_slug=options["team"],
                        plugin=plugin, clients=options["clients"], seconds=options["seconds"],
                        rate=options["rate"])

    def _api_words(self, figures: LoadFigures) -> None:
        protocol = figures.get("protocol")  # an McpLoadFigures's
        over = f"MCP ({protocol})" if figures["mode"] == "mcp" else "API"
        paced = f" starting {figures['rate']:g} calls/s" if figures.get("rate") else ""
        self.stdout.write(
            f"tools {over}, {figures['clients']} clients{paced} for {figures['seconds']} s: "
            f"{figures['requests']} calls, {figures['throughput_rps']} calls/s, "
            f"p50 {figures['p50_ms']} ms, p95 {figures['p95_ms']} ms, "
            f"errors {figures['errors']}")
        for sample in figures["error_samples"]:
            self.stdout.write(f"  error: {sample}")

    def _overhead(self, figures: OverheadFigures) -> None:
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
