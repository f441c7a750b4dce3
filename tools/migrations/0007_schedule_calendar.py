"""Schedules keep a calendar: the rhythm becomes the `when` words (or a cron expression) in a
time zone. The schedules that exist keep what they did: every N minutes or hours stays so,
every day at HH:MM (UTC) becomes `daily HH:MM` in UTC, and their next run time is kept."""

from typing import Any

from django.db import migrations, models


def to_when(apps: Any, schema_editor: Any) -> None:
    Schedule = apps.get_model("tools", "Schedule")
    for schedule in Schedule.objects.all():
        if schedule.every == "minutes":
            schedule.when = f"every {schedule.interval} minutes"
        elif schedule.every == "hours":
            schedule.when = "every 1 hour" if schedule.interval == 1 \
                else f"every {schedule.interval} hours"
        else:
            at = schedule.at_time
            schedule.when = f"daily {at:%H:%M}" if at is not None else "daily 00:00"
        schedule.time_zone = "UTC"
        schedule.save(update_fields=["when", "time_zone"])


def to_every(apps: Any, schema_editor: Any) -> None:
    """Back to the three plain choices, as near as they come (a calendar rule or cron becomes
    every day at its time, or every day at midnight; the time as it was, read as UTC)."""
    import datetime
    import re

    Schedule = apps.get_model("tools", "Schedule")
    for schedule in Schedule.objects.all():
        interval = re.fullmatch(r"every (\d+) (minutes|hours?)", schedule.when or "")
        if interval and not schedule.cron:
            schedule.every = "minutes" if interval.group(2) == "minutes" else "hours"
            schedule.interval = int(interval.group(1))
            schedule.at_time = None
        else:
            clock = re.search(r"(\d{1,2}):(\d\d)$", schedule.when or "")
            schedule.every, schedule.interval = "day", 1
            schedule.at_time = datetime.time(int(clock.group(1)), int(clock.group(2))) \
                if clock else datetime.time(0, 0)
        schedule.save(update_fields=["every", "interval", "at_time"])


class Migration(migrations.Migration):

    dependencies = [
        ("tools", "0006_change_request_follow_up"),
    ]

    operations = [
        migrations.AddField(
            model_name="schedule", name="when",
            field=models.CharField(blank=True, max_length=80),
        ),
        migrations.AddField(
            model_name="schedule", name="cron",
            field=models.CharField(blank=True, max_length=120),
        ),
        migrations.AddField(
            model_name="schedule", name="time_zone",
            field=models.CharField(default="UTC", max_length=64),
        ),
        migrations.AlterField(
            model_name="schedule", name="every",
            field=models.CharField(blank=True, default="", max_length=8),
        ),
        migrations.RunPython(to_when, to_every),
        migrations.RemoveField(model_name="schedule", name="every"),
        migrations.RemoveField(model_name="schedule", name="interval"),
        migrations.RemoveField(model_name="schedule", name="at_time"),
        migrations.AddField(
            model_name="invocation", name="scheduled_for",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="invocation", name="schedule_note",
            field=models.CharField(blank=True, max_length=300),
        ),
    ]
