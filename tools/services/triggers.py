"""Triggers: a command of a tool another system starts with a signed webhook (docs/tools.md,
"Triggers"). Setting one up, its secret, pausing, resuming and deleting it are here; what a
delivery does is in deliveries.py, the signatures in tools/triggers_signing.py.

Only a team admin sets a trigger up (it spends the team's sandbox time and uses its settings
whenever another system says so, like an activation): setting it up is its approval, recorded
on the trigger and in the audit log. The signing secret is sealed (autocoder/sealing.py) and
shown once, when the portal makes it; Slack and Stripe make their own, which the admin enters
(Stripe shows it only after the address is saved there, so a trigger may wait for it).
"""

from __future__ import annotations

import re
import secrets
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from autocoder.sealing import seal
from marketplace.models import Plugin
from runs.approval_rules import MayNotDecide
from teams.models import Team
from teams.services.audit import audit_record
from tools.declared import command_names
from tools.json_input import json_input_problem
from tools.models import Activation, Trigger
from tools.services.activations import check_may_decide
from tools.services.invocations import InvocationRefused, invocation_check
from tools.triggers_signing import PLAIN, SCHEMES, SLACK, STRIPE

MAX_NAME_CHARS = 80
MIN_SECRET_CHARS = 16
FIELD_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
# The senders that make the signing secret themselves: the admin copies theirs in.
SENDER_MAKES_SECRET = (SLACK, STRIPE)


class TriggerError(Exception):
    """A trigger that cannot be set up or changed as asked; `str()` says why in plain words."""


def _may_manage(team: Team, user: User) -> None:
    try:
        check_may_decide(team=team, user=user)
    except MayNotDecide as exc:
        raise TriggerError(str(exc) or f"Only admins of {team.name} set up triggers.") from exc


def secret_make() -> str:
    """A new signing secret: 256 random bits, as text a sender's form takes."""
    return "whsec_" + secrets.token_urlsafe(32)


def _secret_read(scheme: str, typed: str) -> tuple[str, str]:
    """(the secret to keep, the one to show once: only one the portal made)."""
    typed = typed.strip()
    if typed:
        if len(typed) < MIN_SECRET_CHARS:
            raise TriggerError(f"A signing secret has at least {MIN_SECRET_CHARS} characters; "
                               "leave it empty to have one made.")
        return typed, ""
    if scheme in SENDER_MAKES_SECRET:
        return "", ""  # entered later, once the sender shows it
    made = secret_make()
    return made, made


def _input_read(activation: Activation, command: str, event_field: str,
                fixed: Any) -> dict[str, object]:
    names = command_names(activation.version)
    if command not in names:
        raise TriggerError(f"Unknown command {command!r}: this plugin has "
                           f"{', '.join(names) or 'no commands'}.")
    if not FIELD_NAME.match(event_field):
        raise TriggerError("The event's field name takes letters, digits and _ (like event), "
                           "and starts with a letter.")
    if not isinstance(fixed, dict):
        raise TriggerError('The fixed values must be a JSON object, like {"channel": "sales"}.')
    if event_field in fixed:
        raise TriggerError(f"The fixed values also name “{event_field}”, the field the event "
                           "goes into: take it out or name the event's field differently.")
    problem = json_input_problem(fixed)
    if problem is not None:
        raise TriggerError(problem)
    try:  # the input a delivery would send, with an empty event
        invocation_check(activation=activation, command=command,
                         payload={**fixed, event_field: {}}, settings_needed=False)
    except InvocationRefused as exc:
        raise TriggerError(f"With the event as “{event_field}”: {exc}") from exc
    return fixed


def trigger_create(*, activation: Activation, user: User, command: str, scheme: str,
                   name: str = "", event_field: str = "event", fixed: Any = None,
                   secret: str = "") -> tuple[Trigger, str]:
    """A new trigger of the tool in use, approved by `user` (a team admin). Returns it and the
    secret to show once ("" when the admin typed it or the sender makes it)."""
    team = activation.team
    _may_manage(team, user)
    if scheme not in SCHEMES:
        raise TriggerError(f"Choose how the sender signs: {', '.join(SCHEMES)}.")
    event_field = event_field.strip() or "event"
    fixed = _input_read(activation, command, event_field, {} if fixed is None else fixed)
    kept, shown = _secret_read(scheme, secret)
    name = " ".join(name.split())[:MAX_NAME_CHARS] or f"{command} ({scheme})"
    now = timezone.now()
    with transaction.atomic():
        trigger = Trigger.objects.create(
            team=team, plugin=activation.plugin, name=name, command=command, scheme=scheme,
            public_id=secrets.token_urlsafe(24), secret=seal(kept), event_field=event_field,
            fixed=fixed, created_by=user, approved_by=user, approved_at=now)
        audit_record(actor=user, action="tool.trigger_created", team=team, target=trigger,
                     after={"plugin": activation.plugin.name, "command": command,
                            "scheme": scheme, "event_field": event_field,
                            "fixed": sorted(fixed), "secret_set": bool(kept)})
    return trigger, shown


def _trigger(team: Team, plugin: Plugin, trigger_id: int) -> Trigger:
    trigger = Trigger.objects.filter(pk=trigger_id, team=team, plugin=plugin).first()
    if trigger is None:
        raise TriggerError("No such trigger.")
    return trigger


def trigger_secret_set(*, team: Team, plugin: Plugin, user: User, trigger_id: int,
                       secret: str = "") -> str:
    """Replace the signing secret with the one typed, or one made here (returned, to show
    once; "" otherwise). The old one stops working at once."""
    _may_manage(team, user)
    trigger = _trigger(team, plugin, trigger_id)
    typed = secret.strip()
    if not typed and trigger.scheme in SENDER_MAKES_SECRET:
        raise TriggerError(f"{trigger.get_scheme_display().split(' (')[0]} makes the signing "
                           "secret: paste the one it shows you.")
    kept, shown = _secret_read(PLAIN if not typed else trigger.scheme, typed)
    with transaction.atomic():
        Trigger.objects.filter(pk=trigger.pk).update(secret=seal(kept))
        audit_record(actor=user, action="tool.trigger_secret_changed", team=team,
                     target=trigger, after={"plugin": plugin.name, "made_here": bool(shown)})
    return shown


def trigger_pause(*, team: Team, plugin: Plugin, user: User, trigger_id: int,
                  paused: bool = True) -> bool:
    """Pause (deliveries are answered and listed, nothing runs) or resume; False when it was
    so already."""
    _may_manage(team, user)
    trigger = _trigger(team, plugin, trigger_id)
    with transaction.atomic():
        if not Trigger.objects.filter(pk=trigger.pk, paused=not paused).update(paused=paused):
            return False
        audit_record(actor=user, action="tool.trigger_paused" if paused
                     else "tool.trigger_resumed", team=team, target=trigger,
                     after={"plugin": plugin.name, "command": trigger.command})
    return True


def trigger_delete(*, team: Team, plugin: Plugin, user: User, trigger_id: int) -> None:
    """Delete it with its deliveries: its address answers 404 from now on."""
    _may_manage(team, user)
    trigger = _trigger(team, plugin, trigger_id)
    with transaction.atomic():
        audit_record(actor=user, action="tool.trigger_deleted", team=team, target=trigger,
                     before={"plugin": plugin.name, "command": trigger.command,
                             "scheme": trigger.scheme})
        trigger.delete()
