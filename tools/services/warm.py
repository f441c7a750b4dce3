"""Warm sandboxes for a team's tool: on by default, a team admin can turn them off.

A call of a tool may run in a sandbox kept ready for the team's version in use
(autocoder/sandbox/warm.py, docs/sandbox.md "Warm sandboxes"). Which keys may stay warm is
asked by every process's pool once a second (`warm_wanted`): the activation in force, not
disabled by the kill switch, with warm sandboxes on. So a version disabled, upgraded, rolled
back or switched off, or a tool whose admin turned them off, loses its warm sandboxes in every
process within that second; in this process at once. No call runs on a disabled version from
the moment it is disabled: every call is checked first (invocations.py).
"""

from __future__ import annotations

from collections.abc import Iterable

from django.contrib.auth.models import AbstractBaseUser

from autocoder.sandbox import warm_pool
from autocoder.sandbox.warm import WarmKey
from teams.services.audit import audit_record
from tools.models import Activation, Invocation, VersionBlock


def tool_warm_set(*, activation: Activation, user: AbstractBaseUser, on: bool) -> bool:
    """Turn the tool's warm sandboxes on or off (the caller checked that `user` is one of the
    team's admins); whether anything changed. Turned off: this process's go at once."""
    changed = Activation.objects.filter(pk=activation.pk).exclude(warm_sandbox=on).update(
        warm_sandbox=on)
    activation.warm_sandbox = on
    if not on:
        warm_pool.retire(team_id=activation.team_id, version_id=activation.version_id)
    if changed:
        audit_record(actor=user, action="tool.warm_changed", team=activation.team,
                     target=activation, before={"warm_sandbox": not on},
                     after={"warm_sandbox": on})
    return bool(changed)


def warm_of(activation_id: int | None) -> bool:
    """The choice of the activation `activation_id` (an upgrade keeps it; none: on)."""
    if activation_id is None:
        return True
    found = Activation.objects.filter(pk=activation_id).values_list("warm_sandbox",
                                                                    flat=True).first()
    return True if found is None else found


def warm_key(invocation: Invocation, activation: Activation | None = None) -> WarmKey | None:
    """The warm sandboxes `invocation` may run in, or None (the portal's events, a tool whose
    admin turned them off, no activation in force). `activation`: the one in force, read by
    the caller a moment ago (its in-use check runs before the call anyway)."""
    if invocation.caller == Invocation.Caller.EVENT:
        return None
    if activation is not None and activation.version_id == invocation.version_id:
        on = activation.warm_sandbox
    else:
        on = Activation.objects.filter(
            team_id=invocation.team_id, plugin_id=invocation.plugin_id,
            version_id=invocation.version_id, status=Activation.Status.ACTIVE,
            warm_sandbox=True).exists()
    return WarmKey(team_id=invocation.team_id, version_id=invocation.version_id) if on else None


def warm_wanted(keys: Iterable[WarmKey]) -> set[WarmKey]:
    """Of `keys`, those that may stay warm (the pools' reaper asks, autocoder/sandbox)."""
    keys = set(keys)
    if not keys:
        return set()
    blocked = set(VersionBlock.objects.filter(
        version_id__in={key.version_id for key in keys}).values_list("version_id", flat=True))
    in_force = set(Activation.objects.filter(
        team_id__in={key.team_id for key in keys}, status=Activation.Status.ACTIVE,
        warm_sandbox=True).values_list("team_id", "version_id"))
    return {key for key in keys
            if key.version_id not in blocked and (key.team_id, key.version_id) in in_force}


def warm_wanted_checked(keys: Iterable[WarmKey]) -> set[WarmKey]:
    """`warm_wanted` from the reaper's own thread: its database connection closed after."""
    from django.db import close_old_connections, connection

    close_old_connections()
    try:
        return warm_wanted(keys)
    finally:
        connection.close()
