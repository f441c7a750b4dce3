"""`manage.py bench_humaneval --provider P [--script S] [--limit N] --mode M [--json]`.

Runs HumanEval problems through the generation loop and prints pass@1 per mode (single: one
iteration; loop: up to --iterations with reflection; loop+lessons: the same with lessons).
"""

from __future__ import annotations

import json
import time
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from autocoder.llm import ScriptedProvider
from autocoder.llm.types import LLMConfigError
from config.benchmarks import humaneval
from config.management.commands.generate import ensure_schema
from teams.models import Membership, Team
from teams.services import demo_data_ensure, membership_add

BENCH_TEAM_SLUG = "humaneval-bench"


class Command(BaseCommand):
    help = "Measure pass@1 on HumanEval through the generation loop."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--provider", default="", help="LLM provider (default: LLM_PROVIDER)")
        parser.add_argument("--script", default="",
                            help='scripted replies: {"HumanEval/0": {role: [...]}, ...} or one '
                                 "script for every problem")
        parser.add_argument("--limit", type=int, default=None, help="first N problems")
        parser.add_argument("--task", action="append", default=[],
                            help="a task id (HumanEval/12); repeat for several")
        parser.add_argument("--mode", action="append", default=[],
                            help="single, loop or loop+lessons; repeat or comma-separate")
        parser.add_argument("--iterations", type=int, default=5,
                            help="iterations per problem in the loop modes")
        parser.add_argument("--team", default="", help=f"team slug (default: {BENCH_TEAM_SLUG})")
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        modes = [m.strip() for value in options["mode"] or ["loop"] for m in value.split(",")]
        unknown = [m for m in modes if m not in humaneval.MODES]
        if unknown:
            raise CommandError(f"unknown mode(s) {', '.join(unknown)}; choose from "
                               f"{', '.join(humaneval.MODES)}")
        if options["iterations"] < 1 or (options["limit"] is not None and options["limit"] < 1):
            raise CommandError("--iterations and --limit must be at least 1")
        provider = options["provider"] or settings.LLM_PROVIDER
        script = self._script(options["script"]) if provider == "scripted" else None
        try:
            problems = humaneval.load_problems(limit=options["limit"],
                                               task_ids=options["task"] or None)
        except ValueError as error:
            raise CommandError(str(error)) from None
        ensure_schema()
        team, requester = self._team(options["team"])
        progress = (lambda _: None) if options["json"] else self.stdout.write
        started = time.monotonic()
        results = [humaneval.bench_mode(
            mode=mode, problems=problems, team=team, requester=requester, provider=provider,
            script_for=humaneval.script_chooser(script), iterations=options["iterations"],
            progress=progress) for mode in modes]
        report = {"provider": provider, "problems": len(problems),
                  "seconds": round(time.monotonic() - started, 1),
                  "modes": {result.mode: result.as_dict() for result in results}}
        if options["json"]:
            self.stdout.write(json.dumps(report))
            return
        for result in results:
            summary = result.as_dict()
            self.stdout.write(f"{result.mode:<13} pass@1 {result.pass_at_1:.3f} "
                              f"({result.passed}/{result.problems}), "
                              f"{summary['iterations_mean']} iterations/problem, "
                              f"{summary['tokens']['prompt']}+{summary['tokens']['completion']}"
                              " tokens")

    def _script(self, path: str) -> dict[str, Any]:
        path = path or settings.LLM_SCRIPT
        if not path:
            raise CommandError("the scripted provider needs --script FILE.json")
        try:
            with open(path, encoding="utf-8") as handle:
                data = json.load(handle)
        except (OSError, ValueError) as error:
            raise CommandError(f"cannot read the script {path}: {error}") from None
        try:
            for task_script in (data.values() if _per_task(data) else [data]):
                ScriptedProvider(task_script)
        except LLMConfigError as error:
            raise CommandError(f"{path}: {error}") from None
        return data

    def _team(self, slug: str) -> tuple[Team, Any]:
        from runs.services.driving import team_requester

        if slug:
            team = Team.objects.filter(slug=slug).first()
            if team is None:
                raise CommandError(f"no team with slug {slug!r}")
            return team, team_requester(team)
        # A team of its own keeps the bench's lessons out of the demo team's.
        admin = demo_data_ensure(password=settings.DEMO_PASSWORD).team.memberships.filter(
            role=Membership.Role.ADMIN).select_related("user").first()
        if admin is None:
            raise CommandError("the demo team has no admin; pass --team SLUG")
        team, _ = Team.objects.get_or_create(slug=BENCH_TEAM_SLUG,
                                             defaults={"name": "HumanEval bench"})
        membership_add(team=team, user=admin.user, role=Membership.Role.ADMIN)
        return team, admin.user


def _per_task(data: object) -> bool:
    return isinstance(data, dict) and bool(data) and all(
        str(key).startswith("HumanEval/") for key in data)
