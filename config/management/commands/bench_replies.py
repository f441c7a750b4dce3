"""`manage.py bench_replies --base-url URL --model NAME [--calls N] [--json]`: the share of a
model's implementer replies that parse, with constrained replies and without
(config/benchmarks/replies.py; docs/llm.md, "Constrained replies")."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from autocoder.llm.config import ROLE_MAX_TOKENS
from autocoder.llm.types import LLMConfigError, ProviderConfig
from config.benchmarks import replies


class Command(BaseCommand):
    help = ("Ask a running OpenAI-compatible server for the demo's implementer reply N times, "
            "held to its schema and not, and print how many replies parse.")

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--base-url", required=True,
                            help="the server, e.g. http://127.0.0.1:8080/v1")
        parser.add_argument("--model", required=True, help="the model name the server serves")
        parser.add_argument("--api-key", default="", help="the server's key, if it needs one")
        parser.add_argument("--calls", type=int, default=10, help="calls per mode (default 10)")
        parser.add_argument("--max-tokens", type=int, default=ROLE_MAX_TOKENS["implementer"],
                            help="the reply cap (default: the implementer's, "
                                 f"{ROLE_MAX_TOKENS['implementer']})")
        parser.add_argument("--prompt-chars", type=int, default=3000,
                            help="the prompt budget (ENGINE_PROMPT_BUDGET_CHARS; 3000 fits a "
                                 "2048-token context)")
        parser.add_argument("--timeout", type=float, default=300.0,
                            help="seconds of silence before a call fails")
        parser.add_argument("--edits", action="store_true",
                            help="also N pairs of second-iteration calls: whole files, and "
                                 "edits offered (tokens per reply with and without)")
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["calls"] < 1 or options["max_tokens"] < 1:
            raise CommandError("--calls and --max-tokens must be at least 1")
        try:
            config = ProviderConfig(provider="openai", model=options["model"],
                                    base_url=options["base_url"], api_key=options["api_key"],
                                    timeout_s=options["timeout"], max_retries=0,
                                    max_tokens=options["max_tokens"])
            result = replies.run(config, calls=options["calls"],
                                 prompt_chars=options["prompt_chars"], edits=options["edits"],
                                 progress=lambda line: self.stderr.write(line))
        except LLMConfigError as error:
            raise CommandError(str(error)) from None
        if options["json"]:
            self.stdout.write(json.dumps(result))
            return
        parts = [("constrained", result["constrained"]),
                 ("unconstrained", result["unconstrained"])]
        second = result.get("second_iteration")
        if second is not None:
            parts += [("second iteration, whole files", second["whole_files"]),
                      ("second iteration, edits", second["edits"])]
        for mode, tally in parts:
            self.stdout.write(
                f"{mode} ({tally['form'] or 'refused'}): {tally['parse_share']:.0%} of "
                f"{tally['calls']} replies parse; p50 {tally['tokens_p50']} tokens, "
                f"{tally['seconds_p50']} s; {tally['capped_share']:.0%} cut at the cap")
