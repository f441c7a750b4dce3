"""`manage.py prompt_bench SPEC --script SCRIPT [--json]`: the prompt tokens each role receives
in each attempt of a scripted run, and the share of each prompt taken by each section
(config/benchmarks/prompts.py; docs/llm.md, "What each role is told").

The run is a real one (the services, the safety gate, the sandbox), made by the scripted
provider: no model is needed. It runs under full autonomy without lessons, so every attempt
the script leads to is made and nothing waits for a person or depends on earlier runs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.test import override_settings

from autocoder.engine.spec import SpecError, spec_from_json
from autocoder.llm import ScriptedProvider
from autocoder.llm.types import LLMConfigError
from config.benchmarks.prompts import BenchFigures, bench_of


class Command(BaseCommand):
    help = ("Run a spec with scripted replies and print the prompt tokens of each role in each "
            "attempt, and each section's share of them.")

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("spec", help="path of the spec JSON file (docs/engine.md)")
        parser.add_argument("--script", required=True,
                            help="the scripted replies (docs/llm.md, \"The scripted provider\")")
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        from config.management.commands.generate import ensure_schema
        from runs.services import driving
        from teams.services import demo_data_ensure

        spec = _spec(Path(options["spec"]))
        script = _script(options["script"])
        ensure_schema()
        from django.conf import settings

        team = demo_data_ensure(password=settings.DEMO_PASSWORD).team
        reference = _reference_loaded()
        # Loaded above or not at all: a load starting mid-run would change later prompts.
        with override_settings(REFERENCE_AUTOLOAD=False):
            run = driving.generation_run(
                team=team, requester=driving.team_requester(team), spec=spec,
                provider="scripted", script=script, autonomy="full", use_lessons=False)
        calls = run.llm_calls.filter(error="").order_by("id").values(
            "role", "iteration", "purpose", "messages")
        bench = bench_of(spec["name"], run.status, run.iteration, [dict(c) for c in calls])
        data = bench.as_dict()
        data["reference"], data["run_id"] = reference, run.id
        if options["json"]:
            self.stdout.write(json.dumps(data))
            return
        self._report(data)

    def _report(self, data: BenchFigures) -> None:
        self.stdout.write(f"{data['spec']}: {data['status']} in {data['attempts']} attempt(s), "
                          f"{data['prompt_tokens']} prompt tokens (characters / 4); "
                          f"reference docs: {data['reference']}")
        for role, row in data["by_role"].items():
            per = ", ".join(f"attempt {n}: {t}" for n, t in row.items())
            self.stdout.write(f"  {role:<12} {per}")
        self.stdout.write("  share of the prompt tokens by section:")
        for name, share in data["section_shares"].items():
            self.stdout.write(f"    {name:<13} {share:.1%}")


def _reference_loaded() -> str:
    """Loads the runtime's API reference first, so every prompt of the run sees the same
    (docs/engine.md, "Reference docs"); what the prompts had, in words."""
    from autocoder.reference.loading import load_reference, reference_loaded, reference_path

    if not reference_path().exists():
        return f"none (no {reference_path()})"
    load_reference()
    return "loaded" if reference_loaded() else "none"


def _spec(path: Path) -> dict[str, Any]:
    try:
        return spec_from_json(path.read_text(encoding="utf-8")).as_dict()
    except (OSError, UnicodeDecodeError) as error:
        raise CommandError(f"cannot read the spec file {path}: {error}") from None
    except SpecError as error:
        raise CommandError(f"{path}: " + "; ".join(error.errors)) from None


def _script(path: str) -> dict[str, list[str]]:
    try:
        return ScriptedProvider.from_file(path).script
    except LLMConfigError as error:
        raise CommandError(str(error)) from None
