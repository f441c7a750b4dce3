"""`manage.py generation pause|resume|manual [--team SLUG]`: the generation switch from a
shell, as the settings pages set it (docs/portal.md, "Pausing generation"); audited as the
portal itself (or --as USER)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.core.management.base import BaseCommand, CommandError, CommandParser

from runs.services.generation import generation_mode_change
from teams.models import GenerationMode, Team
from teams.selectors.generation import generation_state

MODES = {"pause": GenerationMode.PAUSED, "resume": GenerationMode.AUTOMATIC,
         "manual": GenerationMode.MANUAL, "automatic": GenerationMode.AUTOMATIC}


class Command(BaseCommand):
    help = ("Pause all generation, resume it, or make it manual (each new run waits for Start),"
            " for the whole site or one team.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=sorted(MODES), help="what to do")
        parser.add_argument("--team", default="", help="a team's slug (default: the whole site)")
        parser.add_argument("--as", dest="actor", default="",
                            help="the user name the audit log records (default: the portal)")

    def handle(self, *args: Any, **options: Any) -> None:
        team = None
        if options["team"]:
            team = Team.objects.filter(slug=options["team"]).first()
            if team is None:
                raise CommandError(f"no team has the slug {options['team']!r}")
        actor = None
        if options["actor"]:
            actor = User.objects.filter(username=options["actor"]).first()
            if actor is None:
                raise CommandError(f"no user is called {options['actor']!r}")
        mode = MODES[options["action"]]
        released = generation_mode_change(actor=actor, mode=mode, team=team)
        where = f"team {team.slug}" if team is not None else "every team"
        state = generation_state(team=team)
        self.stdout.write(f"Generation is now {GenerationMode(mode).label.lower()} for {where}.")
        if state.mode != mode:
            self.stdout.write(f"The site's switch is stricter: runs of {where} are"
                              f" {GenerationMode(state.mode).label.lower()}.")
        if released:
            self.stdout.write(f"{len(released)} waiting run(s) go on: {released}")
