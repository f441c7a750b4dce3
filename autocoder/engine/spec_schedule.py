"""What a spec says about when the plugin runs by itself (docs/engine.md, "Spec format",
`schedule`): the requester's own words, the rhythm as `when` words, the task it runs and the
period each run covers.

```json
"schedule": {"words": "every Monday morning", "when": "weekly mon 08:00",
             "command": "post-hours", "period": "last_week"}
```

Absent: it runs only when someone calls it. `when` is null when the requester said it only in
words: whoever activates the plugin sets the rhythm then. With a `period`, the scheduled
command takes the input fields `start` and `end` (ISO dates, the first and last day of the
period) or, for `since_last_run`, `since` (an ISO date-time): the prompts say so, and the
activation's schedule fills them in at each run.

The `when` words are parsed by the schedules' calendar (tools/services/calendar.py); here they
are only checked for their shape, since the engine imports nothing of the tools.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TypedDict

PERIODS = ("today", "yesterday", "this_week", "last_week", "this_month", "last_month",
           "since_last_run")
MAX_WORDS_CHARS = 500
_FIELDS = ("words", "when", "command", "period")
_TIME = r"(?:[01]\d|2[0-3]):[0-5]\d"
_DAY = r"(?:mon|tue|wed|thu|fri|sat|sun)"
_WHEN = re.compile(
    rf"every [1-9]\d* (?:minutes?|hours?)|daily {_TIME}|weekly {_DAY}(?:,{_DAY})* {_TIME}"
    rf"|monthly (?:[1-9]|[12]\d|3[01]|last|(?:first|second|third|fourth|last)-{_DAY}) {_TIME}")


class ScheduleDict(TypedDict):
    """`ScheduleSpec.as_dict()`: the spec's `schedule` as it is stored."""
    words: str
    when: str | None
    command: str
    period: str | None


@dataclass(frozen=True)
class ScheduleSpec:
    words: str
    when: str | None
    command: str
    period: str | None = None

    @property
    def input_fields(self) -> tuple[str, ...]:
        """The input fields each run gives the command (none without a period)."""
        if self.period is None:
            return ()
        return ("since",) if self.period == "since_last_run" else ("start", "end")

    def as_dict(self) -> ScheduleDict:
        return {"words": self.words, "when": self.when, "command": self.command,
                "period": self.period}


def when_is_valid(text: str) -> bool:
    """Whether `text` has the shape of the `when` words (docs/tools.md, schedules)."""
    return bool(_WHEN.fullmatch(text))


def check_schedule(raw: object, commands: list[str], errors: list[str]) -> ScheduleSpec | None:
    """The spec's `schedule` (None: absent), every problem appended to `errors`. `commands`
    are the spec's command names; a schedule without `command` runs the first."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        errors.append("schedule: must be a JSON object with words, when, command and period")
        return None
    found = [f"schedule.{key}: unknown field (expected {', '.join(_FIELDS)})"
             for key in raw if key not in _FIELDS]
    words, when, period = raw.get("words", ""), raw.get("when"), raw.get("period")
    if not isinstance(words, str) or len(words) > MAX_WORDS_CHARS:
        found.append(f"schedule.words: text of at most {MAX_WORDS_CHARS} characters")
    if when is not None and (not isinstance(when, str) or not when_is_valid(when)):
        found.append(f"schedule.when: {when!r} is not a rhythm such as \"daily 07:30\","
                     " \"weekly mon,thu 08:00\", \"monthly 1 08:00\" or \"every 2 hours\"")
    if when is None and not (isinstance(words, str) and words.strip()):
        found.append("schedule: say when it runs, in `when` or at least in `words`")
    if period is not None and period not in PERIODS:
        found.append(f"schedule.period: one of {', '.join(PERIODS)} or null (got {period!r})")
    command = raw.get("command", commands[0] if commands else "")
    if not isinstance(command, str) or (commands and command not in commands):
        found.append(f"schedule.command: {command!r} is not one of the spec's commands")
    errors += found
    if found:
        return None
    return ScheduleSpec(words=" ".join(str(words).split()), when=when, command=str(command),
                        period=period)
