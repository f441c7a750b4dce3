"""`manage.py tool_call TEAM PLUGIN COMMAND --payload JSON [--as USER] [--json]`.

Calls a team's tool now, through the HTTP API's service (tools/services/invocations.py,
`invocation_call`): the same checks (the kill switch, the version in use, the command, the
input and its schema, the size limit), the same sandbox and limits, and an entry in the tool's
invocation log, as the call of the member named by --as (without it: the admin who activated
the version in use). The payload is read like the API's body (tools/json_input.py): JSON the
tools cannot use is refused before anything runs. It waits for the answer; with --json it
prints one object: ok, output, error, error_kind, invocation (the log entry's id),
http_requests (the requests the call made through `api.http`, from the log entry), and for a
tool whose needed settings are not all entered, missing_settings and settings_url. The exit
status is non-zero whenever ok is false.
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from teams.models import Membership, Team
from tools.management._options import json_object_option, team_option, tool_option
from tools.models import Activation, Invocation
from tools.services.invocations import InvocationRefused, invocation_call


class Command(BaseCommand):
    help = "Call a team's tool now, as one of its members, and print what it answered."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("team", help="slug of the team")
        parser.add_argument("plugin", help="the plugin's name")
        parser.add_argument("command", help="the plugin's command")
        parser.add_argument("--payload", default="{}", metavar="JSON",
                            help='the input, a JSON object like {"text": "hello"} (default {})')
        parser.add_argument("--as", dest="username", default="", metavar="USER",
                            help="a member of the team, whose call it is (default: the admin "
                                 "who activated the version in use)")
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        team = team_option(options["team"])
        activation = tool_option(team, options["plugin"])
        user = _caller(team, activation, options["username"])
        payload = _payload(options["payload"])
        try:
            invocation = invocation_call(activation=activation, token_id=None, user_id=user.pk,
                                         command=options["command"], payload=payload)
        except InvocationRefused as exc:
            self._refused(exc, options["json"])
            raise CommandError(f"refused, nothing was run: {exc}") from None
        result = _result(invocation)
        if options["json"]:
            self.stdout.write(json.dumps(result, ensure_ascii=False))
        else:
            self._words(result, invocation, user.get_username())
        if not result["ok"]:
            raise CommandError(f"the call failed ({result['error_kind']}): {result['error']}")

    def _refused(self, refused: InvocationRefused, as_json: bool) -> None:
        if as_json:  # a script reads one object whatever happened
            extra = ({"missing_settings": list(refused.missing), "settings_url": refused.url}
                     if refused.missing else {})
            self.stdout.write(json.dumps({"ok": False, "output": None, "error": str(refused),
                                          "error_kind": "refused", "invocation": None,
                                          "http_requests": [], **extra}, ensure_ascii=False))

    def _words(self, result: dict[str, Any], invocation: Invocation, username: str) -> None:
        head = (f"{invocation.command} of {invocation.plugin.name} "
                f"{invocation.version.version} as {username}: ")
        if result["ok"]:
            self.stdout.write(f"{head}ok in {invocation.duration_ms} ms "
                              f"(invocation {invocation.pk})")
            output = result["output"]
            self.stdout.write(output if isinstance(output, str)
                              else json.dumps(output, indent=2, ensure_ascii=False))
        else:
            self.stdout.write(f"{head}{invocation.get_status_display().lower()} "
                              f"({result['error_kind']}, invocation {invocation.pk})")
            self.stdout.write(f"  {result['error']}")
        for line in invocation.log_lines or []:
            self.stdout.write(f"  log: {line}")
        for request in result["http_requests"]:
            self.stdout.write(f"  http: {json.dumps(request, ensure_ascii=False)}")


def _caller(team: Team, activation: Activation, username: str) -> Any:
    """The member whose call it is: the one named, or the admin who activated the version."""
    if not username:
        user = activation.decided_by
        if user is None or not Membership.objects.filter(team=team, user=user).exists():
            raise CommandError(f"name a member of {team.name} whose call it is: --as USER "
                               "(the admin who activated this version is no longer a member)")
        return user
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise CommandError(f"no user named {username!r}")
    if not Membership.objects.filter(team=team, user=user).exists():
        raise CommandError(f"{username} is not a member of {team.name}: only its members use "
                           "its tools.")
    return user


def _payload(text: str) -> dict[str, object]:
    """The payload as the API reads its body; a CommandError (nothing run) when unusable."""
    return json_object_option(text, option="--payload", nothing="Nothing was run.")


def _result(invocation: Invocation) -> dict[str, object]:
    ok = invocation.status == Invocation.Status.OK
    # Host-mediated HTTP (`api.http`) records its requests on the log entry; none before then.
    requests = getattr(invocation, "http_requests", None)
    return {"ok": ok, "output": invocation.output if ok else None,
            "error": "" if ok else invocation.error,
            "error_kind": "" if ok else invocation.error_kind,
            "invocation": invocation.pk,
            "http_requests": list(requests) if isinstance(requests, list) else []}
