"""`manage.py generate SPEC.json [--provider P] [--script S.json] [--out DIR] [--json]`.

Runs one generation run in this process through the same services the workers use
(docs/engine.md, "manage.py generate")
and writes the best candidate's files to --out.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from autocoder import config
from autocoder.engine.spec import SpecError, spec_from_json
from autocoder.llm import ScriptedProvider
from autocoder.llm.types import LLMConfigError
from autocoder.reference import background as reference
from runs.models import Run
from runs.selectors import results as selectors
from runs.selectors.results import ReferenceLoad, RunSummary
from runs.services import driving
from teams.models import Team
from teams.services import demo_data_ensure

# Statuses after which the command reports failure through its exit code.
FAILED = Run.UNSUCCESSFUL


def ensure_schema() -> None:
    """Bring the embedded database up to date on first use; never migrate a configured one
    behind its operator's back."""
    from django.core.management import call_command
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    if not executor.migration_plan(executor.loader.graph.leaf_nodes()):
        return
    # manage.py has already pointed DATABASE_URL at the embedded server when none was given.
    if str(config.embedded_pg_dir()) not in unquote(config.database_url()):
        raise CommandError("the database has unapplied migrations: run manage.py migrate first")
    call_command("migrate", interactive=False, verbosity=0)


def step_line(run: Run) -> str:
    """What the command prints after each step: the attempt in hand, numbered and named as
    the run page does ("Attempt 2"), and the step that comes next."""
    label = Run.Phase(run.phase).label if run.phase in Run.Phase.values else run.phase
    return (f"run {run.id}  attempt {selectors.attempt_in_hand(run)} of {run.max_iterations}"
            f"  next: {label.lower()}")


class Command(BaseCommand):
    help = "Generate a plugin from a spec file in this process and print the run's result."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("spec", help="path of the spec JSON file (docs/engine.md, Spec format)")
        parser.add_argument("--provider", default="",
                            help="one LLM provider for every role (default: each role's own)")
        parser.add_argument("--script", default="", help="scripted replies (provider scripted)")
        parser.add_argument("--out", default="", help="directory for the plugin's files")
        parser.add_argument("--max-iterations", type=int, default=None)
        parser.add_argument("--autonomy", choices=["guided", "semi", "full"], default="",
                            help="override the spec's autonomy")
        parser.add_argument("--team", default="", help="team slug (default: the demo team)")
        parser.add_argument("--no-lessons", action="store_true",
                            help="neither retrieve nor write lessons")
        parser.add_argument("--reference-wait", type=float, default=None, metavar="SECONDS",
                            help="after the run, wait at most this long for the reference docs "
                                 "to finish loading, then stop the load (default: until done)")
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        spec = self._spec(Path(options["spec"]))
        # Only --provider forces every role; without it each role uses its own settings.
        provider = options["provider"]
        scripted = (provider or settings.LLM_PROVIDER) == "scripted"
        # --script alone is a recorded demo: it needs no model set up (docs/llm.md, "The
        # scripted provider").
        scripted = scripted or (not provider and bool(options["script"]))
        script = self._script(options["script"]) if scripted else None
        if options["max_iterations"] is not None and options["max_iterations"] < 1:
            raise CommandError("--max-iterations must be at least 1")
        if options["reference_wait"] is not None and options["reference_wait"] < 0:
            raise CommandError("--reference-wait must be 0 or more seconds")
        ensure_schema()
        team = self._team(options["team"])
        quiet = options["json"]
        # The run's first prompts would start it too; starting it now gives it a head start.
        reference.ensure_loaded()
        run = driving.generation_run(
            team=team, requester=driving.team_requester(team), spec=spec, provider=provider,
            script=script, max_iterations=options["max_iterations"],
            autonomy=options["autonomy"], use_lessons=not options["no_lessons"],
            on_step=None if quiet else self._progress,
        )
        out = Path(options["out"] or settings.VAR_DIR / "plugins" / f"{run.project.name}-{run.id}")
        written = selectors.candidate_write(run, out)
        summary = selectors.run_summary(run, plugin_dir=str(written) if written else None)
        summary["reference"] = self._reference(options["reference_wait"])
        if quiet:
            self.stdout.write(json.dumps(summary))
        else:
            self._report(summary)
        if summary["status"] == Run.Status.HELD:
            # Not the model's failure: a part of the installation must be fixed first.
            self.stderr.write(f"the run waits for the installation: {run.error}")
            raise SystemExit(3)
        if summary["status"] in FAILED:
            raise SystemExit(1)

    def _reference(self, wait_s: float | None) -> ReferenceLoad:
        """The reference docs' load, settled before the process exits: a load still running
        in its thread at exit aborted the process (exit code 134) after a run that succeeded
        (autocoder/reference/background.py)."""
        if reference.load_running():
            bound = "" if wait_s is None else f" (for up to {wait_s:g} s)"
            self.stderr.write(f"waiting for the reference docs to finish loading{bound}: only "
                              "the first load on a machine takes minutes; Ctrl-C stops it, and "
                              "`manage.py reference_load` loads them later")
        settled = reference.load_settle(wait_s=wait_s)
        return {"state": settled.state, "entries": settled.entries, "detail": settled.text}

    def _spec(self, path: Path) -> dict[str, Any]:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise CommandError(f"cannot read the spec file {path}: {error}") from None
        try:
            return spec_from_json(text).as_dict()
        except SpecError as error:
            for message in error.errors:
                self.stderr.write(f"{path}: {message}")
            raise SystemExit(2) from None

    def _script(self, path: str) -> dict[str, list[str]]:
        path = path or settings.LLM_SCRIPT
        if not path:
            raise CommandError("the scripted provider needs --script FILE.json (or LLM_SCRIPT); "
                               "to use a model, pass --provider openai|anthropic|llamacpp")
        try:
            return ScriptedProvider.from_file(path).script
        except LLMConfigError as error:
            raise CommandError(str(error)) from None

    def _team(self, slug: str) -> Team:
        if not slug:
            return demo_data_ensure(password=settings.DEMO_PASSWORD).team
        team = Team.objects.filter(slug=slug).first()
        if team is None:
            raise CommandError(f"no team with slug {slug!r}")
        return team

    def _progress(self, run: Run) -> None:
        if run.status == Run.Status.RUNNING:
            self.stdout.write(step_line(run))

    def _report(self, summary: RunSummary) -> None:
        self.stdout.write(f"status      {summary['status']}")
        self.stdout.write(f"attempts    {summary['iterations']}")
        self.stdout.write(f"pass rate   {summary['pass_rate']:.0%}")
        for event in summary["loop_events"]:
            self.stdout.write(f"loop event  after attempt {event['iteration']}: {event['type']} "
                              f"-> {event['action']}")
        tokens = summary["tokens"]
        self.stdout.write(f"tokens      {tokens['prompt']} prompt, {tokens['completion']} "
                          "completion")
        if summary["error"]:
            self.stdout.write(f"reason      {summary['error']}")
        if summary["pending_approval"]:
            self.stdout.write(f"waiting     for a {summary['pending_approval']} approval "
                              f"(manage.py approve {summary['run_id']} --as USERNAME)")
        self.stdout.write(f"plugin      {summary['plugin_dir'] or '(no candidate)'}")
        self.stdout.write(f"reference   {summary['reference']['detail']}")
