"""`manage.py tool_trigger TEAM PLUGIN COMMAND --as ADMIN --scheme github|slack|stripe|plain
[--input JSON] [--event-field NAME] [--name NAME] [--base-url URL] [--json]`.

Sets up a trigger of a team's tool as its Triggers page does (tools/services/triggers.py,
`trigger_create`): only a team admin, whose setting it up approves it. `--input` holds the
fixed values sent with every event, which goes in as `--event-field` (default "event"). The
signing secret comes from the environment variable TRIGGER_SECRET, never the command line
(where other users of the machine could read it); when it is unset or empty the portal makes
one for GitHub and plain and prints it once, and a Slack or Stripe trigger waits for its
sender's, entered on the Triggers page. Prints the trigger's address (`--base-url`, default the
first of DJANGO_CSRF_TRUSTED_ORIGINS, else http://localhost:8000); with --json one object:
trigger (its id), name, command, scheme, url, path, secret (only the one made here, else
null), secret_set. Nothing is saved when anything is refused (exit status non-zero).
"""

from __future__ import annotations

import json
import os
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.urls import reverse

from tools.management._options import json_object_option, team_option, tool_option, user_option
from tools.services.triggers import TriggerError, trigger_create
from tools.triggers_signing import SCHEMES

SECRET_VARIABLE = "TRIGGER_SECRET"  # noqa: S105 - the variable's name, not a secret


class Command(BaseCommand):
    help = "Set up a webhook trigger of a team's tool and print its address."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("team", help="slug of the team")
        parser.add_argument("plugin", help="the plugin's name")
        parser.add_argument("command", help="the plugin's command the trigger runs")
        parser.add_argument("--as", dest="username", required=True, metavar="ADMIN",
                            help="an admin of the team, who approves the trigger")
        parser.add_argument("--scheme", required=True, choices=SCHEMES,
                            help="how the sender signs its webhooks")
        parser.add_argument("--input", default="{}", metavar="JSON",
                            help="fixed values sent with every event, a JSON object")
        parser.add_argument("--event-field", default="event", metavar="NAME",
                            help="the input field the event goes into (default event)")
        parser.add_argument("--name", default="", help="its name (default: command and scheme)")
        parser.add_argument("--base-url", default="", metavar="URL",
                            help="the portal's address as senders reach it")
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        team = team_option(options["team"])
        user = user_option(options["username"])
        activation = tool_option(team, options["plugin"])
        fixed = json_object_option(options["input"], option="--input",
                                   nothing="Nothing was saved.")
        try:
            trigger, shown = trigger_create(
                activation=activation, user=user, command=options["command"],
                scheme=options["scheme"], name=options["name"],
                event_field=options["event_field"], fixed=fixed,
                secret=os.environ.get(SECRET_VARIABLE, ""))
        except TriggerError as exc:
            raise CommandError(f"{exc} Nothing was saved.") from None
        path = reverse("tools:hook", args=[trigger.public_id])
        url = _base_url(options["base_url"]) + path
        if options["json"]:
            self.stdout.write(json.dumps({
                "trigger": trigger.pk, "name": trigger.name, "command": trigger.command,
                "scheme": trigger.scheme, "url": url, "path": path, "secret": shown or None,
                "secret_set": bool(trigger.secret)}, ensure_ascii=False))
            return
        self.stdout.write(f"Trigger {trigger.pk} “{trigger.name}”: {trigger.command} of "
                          f"{activation.plugin.name} when {trigger.get_scheme_display()} sends "
                          f"an event, approved by {user.get_username()}.")
        self.stdout.write(f"  address: {url}")
        if shown:
            self.stdout.write(f"  signing secret (shown once, {SECRET_VARIABLE} was not set): "
                              f"{shown}")
        elif not trigger.secret:
            self.stdout.write(f"  no signing secret yet: every delivery is refused until an "
                              f"admin enters the sender's on the tool's Triggers page (or set "
                              f"{SECRET_VARIABLE} and set the trigger up again).")


def _base_url(given: str) -> str:
    origins = list(getattr(settings, "CSRF_TRUSTED_ORIGINS", []) or [])
    return (given or (origins[0] if origins else "http://localhost:8000")).rstrip("/")
