"""`manage.py schedules_run_due [--now ISO-8601] [--json]`.

Runs every schedule due at `--now` (default: now) once, by the road the workers' watchdog takes
(tools/services/schedule_runs.py, `schedules_due_run`): the same claim, catch-up rule (missed
runs run once, late, and say so), period placeholders and checks; a run that cannot start is
recorded with why and its owner told. The calls it queued are then run here (a call a worker
took first is waited for) and each outcome printed; with --json one object: now, runs (each
with schedule, name, plugin, command, scheduled_for, invocation, outcome — ok, failed,
not_started or waiting —, error, note, missed). The exit status is non-zero when a run did not
succeed. For tests and for admins who want to run what is due by hand.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from autocoder.calling.invoke import INVOKE_LIMITS
from tools.models import Invocation
from tools.schedule_selectors import run_rows
from tools.services.schedule_runs import (
    ScheduleRun,
    schedule_runs_finish,
    schedules_due_run,
)


class Command(BaseCommand):
    help = "Run every schedule that is due (at --now) once, and print how each run ended."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--now", default="", metavar="ISO-8601",
                            help="the moment to run what is due at, like "
                                 "2027-03-29T08:00:00+02:00 (default: now)")
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        now = _moment(options["now"])
        runs = schedules_due_run(now=now)
        ended = schedule_runs_finish(runs, timeout_s=INVOKE_LIMITS.timeout_s + 60)
        found = [_result(run, invocation) for run, invocation in zip(runs, ended, strict=True)]
        if options["json"]:
            self.stdout.write(json.dumps({"now": now.isoformat(), "runs": found},
                                         ensure_ascii=False))
        else:
            self._words(now, found)
        failed = [run for run in found if run["outcome"] != "ok"]
        if failed:
            raise CommandError(f"{len(failed)} of {len(found)} runs did not succeed.")

    def _words(self, now: datetime, found: list[dict[str, object]]) -> None:
        if not found:
            self.stdout.write(f"Nothing is due at {now.isoformat()}.")
        for run in found:
            self.stdout.write(f"Schedule {run['schedule']} “{run['name']}” ({run['plugin']} "
                              f"{run['command']}, for {run['scheduled_for']}): {run['words']}")
            if run["note"]:
                self.stdout.write(f"  {run['note']}")


def _moment(text: str) -> datetime:
    if not text.strip():
        return timezone.now()
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise CommandError(f"--now {text!r}: write a moment in ISO 8601, like "
                           "2027-03-29T08:00:00+02:00.") from None
    if moment.tzinfo is None:
        raise CommandError(f"--now {text!r}: say its offset or time zone, like "
                           "2027-03-29T08:00:00+02:00 or 2027-03-29T06:00:00Z.")
    return moment


def _result(run: ScheduleRun, invocation: Invocation | None) -> dict[str, object]:
    schedule = run.schedule
    row = run_rows(schedule, [invocation])[0] if invocation is not None else None
    return {"schedule": schedule.pk, "name": schedule.name, "plugin": schedule.plugin.name,
            "command": schedule.command, "scheduled_for": run.scheduled_for.isoformat(),
            "invocation": invocation.pk if invocation is not None else None,
            "outcome": row.outcome if row is not None else "not_started",
            "error": invocation.error if invocation is not None else run.reason,
            "words": row.words if row is not None else f"Could not start: {run.reason}",
            "note": run.note, "missed": run.missed}
