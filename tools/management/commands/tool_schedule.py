"""`manage.py tool_schedule TEAM PLUGIN COMMAND --when WORDS [--tz ZONE] [--cron EXPR]
--input JSON --as USER [--name NAME] [--json]`.

Sets up a schedule of a team's tool as the tool's page does (tools/services/schedules.py,
`schedule_create`): only the team's reviewers and admins, the rhythm in the `when` words of
tools/services/calendar.py ("every 15 minutes", "daily 07:30", "weekly mon,thu 08:00",
"monthly last 08:00", "monthly first-mon 08:00") or a cron expression (`--cron`, which takes
the place of --when), in the time zone `--tz` (default: the team's, see docs/tools.md), the
input a JSON object whose strings may hold period placeholders ({{last_week.start}}, ...), an
unknown one refused. Prints the schedule, its next run times and what the next run will send;
with --json one object: schedule (its id), name, when, cron, time_zone, next_runs (ISO 8601),
next_input, period. Nothing is saved when anything is refused (exit status non-zero).
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from tools.management._options import json_object_option, team_option, tool_option, user_option
from tools.schedule_selectors import schedule_preview
from tools.services.schedules import ScheduleError, describe, schedule_create


class Command(BaseCommand):
    help = "Set up a schedule of a team's tool and print its next runs."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("team", help="slug of the team")
        parser.add_argument("plugin", help="the plugin's name")
        parser.add_argument("command", help="the plugin's command the schedule runs")
        parser.add_argument("--when", default="", metavar="WORDS",
                            help='the rhythm, like "weekly mon 08:00" or "every 15 minutes"')
        parser.add_argument("--cron", default="", metavar="EXPR",
                            help='a cron expression instead of --when, like "0 8 * * 1"')
        parser.add_argument("--tz", default="", metavar="ZONE",
                            help="an IANA time zone like Europe/Berlin (default: the team's)")
        parser.add_argument("--input", default="{}", metavar="JSON",
                            help="the input, a JSON object; its strings may hold periods "
                                 "like {{last_week.start}} (default {})")
        parser.add_argument("--as", dest="username", required=True, metavar="USER",
                            help="a reviewer or admin of the team, whose schedule it is")
        parser.add_argument("--name", default="", help="its name (default: the command)")
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        team = team_option(options["team"])
        user = user_option(options["username"])
        activation = tool_option(team, options["plugin"])
        if not options["when"].strip() and not options["cron"].strip():
            raise CommandError('say when it runs: --when "weekly mon 08:00" (or --cron '
                               '"0 8 * * 1"). Nothing was saved.')
        if options["when"].strip() and options["cron"].strip():
            raise CommandError("give --when or --cron, not both. Nothing was saved.")
        try:
            schedule = schedule_create(
                activation=activation, user=user, name=options["name"],
                command=options["command"], payload=_input(options["input"]),
                when=options["when"], cron=options["cron"], time_zone=options["tz"].strip())
        except ScheduleError as exc:
            raise CommandError(f"{exc} Nothing was saved.") from None
        preview = schedule_preview(schedule)
        if options["json"]:
            self.stdout.write(json.dumps({
                "schedule": schedule.pk, "name": schedule.name, "command": schedule.command,
                "when": schedule.when, "cron": schedule.cron, "time_zone": schedule.time_zone,
                "words": describe(schedule),
                "next_runs": [run.isoformat() for run in preview.runs],
                "next_input": preview.payload, "period": preview.period}, ensure_ascii=False))
            return
        self.stdout.write(f"Schedule {schedule.pk} “{schedule.name}”: {schedule.command} of "
                          f"{activation.plugin.name} {describe(schedule)}, set up by "
                          f"{user.get_username()}.")
        self.stdout.write(f"  next: {preview.next_words}")
        for words in preview.words[1:]:
            self.stdout.write(f"  then: {words}")
        self.stdout.write("  the next run sends: " + json.dumps(preview.payload,
                                                                 ensure_ascii=False))


def _input(text: str) -> dict[str, object]:
    return json_object_option(text, option="--input", nothing="Nothing was saved.")
