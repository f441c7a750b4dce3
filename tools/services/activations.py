"""Activations: a team asks to use a published version, a team admin approves or refuses it
(runs/approval_rules.py says who), upgrades are new activations, and a roll-back returns
to the version in force before. Every decision is in the team's audit log."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils import timezone

from marketplace.models import Plugin, PluginVersion
from runs import approval_rules
from teams.models import Membership, Team
from teams.services.audit import audit_record
from teams.services.notifications import (
    notification_decided_send,
    notifications_review_requested,
    notifications_review_settled,
)
from tools.models import Activation, VersionBlock
from tools.services.addresses import addresses_approve_entered
from tools.services.events import activation_events_queue
from tools.services.warm import warm_of

Status = Activation.Status


class ActivationError(Exception):
    """An activation that cannot be asked for or decided as asked; `str()` says why."""


def activation_url(activation: Activation) -> str:
    return reverse("tools:activation", args=[activation.team.slug, activation.pk])


def check_may_decide(*, team: Team, user: User) -> Membership:
    """The user's membership when they may decide activations of `team`; MayNotDecide (the
    approval rules' refusal, a 403) otherwise."""
    membership = Membership.objects.filter(team=team, user=user).first()
    refusal = approval_rules.activation_refusal(membership=membership, team=team)
    if refusal or membership is None:
        raise approval_rules.MayNotDecide(refusal)
    return membership


def yanked_refusal(version: PluginVersion) -> str:
    """Why a withdrawn (yanked) version cannot be activated, in plain words."""
    why = f" ({version.yank_reason.rstrip('.')})" if version.yank_reason else ""
    return (f"Version {version.version} of {version.plugin.name} was withdrawn (yanked) by its "
            f"publisher{why}: it cannot be activated. Choose another version.")


def _usable(team: Team, version: PluginVersion) -> None:
    plugin = version.plugin
    if version.status != PluginVersion.Status.PUBLISHED:
        raise ActivationError("Only published versions can be activated.")
    if version.yanked:
        raise ActivationError(yanked_refusal(version))
    if plugin.team_id != team.pk and plugin.visibility != Plugin.Visibility.PUBLIC:
        raise ActivationError("Only your team's own plugins and public ones can be activated.")
    if VersionBlock.objects.filter(version=version).exists():
        raise ActivationError("A site administrator disabled this version everywhere; it "
                              "cannot be activated.")


def activation_request(*, team: Team, version: PluginVersion, user: User,
                       notify: bool = True) -> Activation:
    """Ask for `version` to be used by `team` (any member may ask). The team's admins are
    notified (not when an admin decides it in the same step: `notify=False`); asking twice
    returns the waiting request."""
    _usable(team, version)
    current = Activation.objects.filter(team=team, plugin=version.plugin,
                                        status=Status.ACTIVE).first()
    if current is not None and current.version_id == version.pk:
        raise ActivationError("Your team already uses this version.")
    waiting = Activation.objects.filter(team=team, version=version, status=Status.PENDING).first()
    if waiting is not None:
        return waiting
    try:
        with transaction.atomic():
            return _activation_create(team, version, user, current, notify)
    except IntegrityError:  # asked at the same moment by someone else: that request stands
        return Activation.objects.get(team=team, version=version, status=Status.PENDING)


def _activation_create(team: Team, version: PluginVersion, user: User,
                       current: Activation | None, notify: bool) -> Activation:
    activation = Activation.objects.create(team=team, plugin=version.plugin, version=version,
                                           previous=current, requested_by=user)
    audit_record(actor=user, action="tool.activation_requested", team=team, target=activation,
                 after={"plugin": version.plugin.name, "version": version.version})
    if notify:
        _deciders_notify(activation)
    return activation


def _deciders_notify(activation: Activation) -> None:
    message = (f"Activation to approve: {activation.plugin.name} {activation.version.version} "
               f"for {activation.team.name}.")
    deciders = [u for u in approval_rules.activation_deciders(team=activation.team)
                if u.pk != activation.requested_by_id]
    notifications_review_requested(team=activation.team, users=deciders, message=message,
                                   url=activation_url(activation))


def activation_decide(*, activation: Activation, user: User, approve: bool,
                      comment: str = "") -> Activation:
    """Approve (the version becomes the one in use; the one before is retired) or refuse a
    waiting activation. One decision wins: a second one is told who decided first."""
    check_may_decide(team=activation.team, user=user)
    if approve:
        _usable(activation.team, activation.version)
    now = timezone.now()
    status = Status.ACTIVE if approve else Status.REFUSED
    try:
        with transaction.atomic():
            fields: dict[str, Any] = {"status": status, "decided_by": user, "decided_at": now,
                      "comment": comment.strip()}
            if approve:  # what the roll-back returns to: the version in use at this moment
                fields["previous_id"] = _retire_current(activation.team, activation.plugin, now)
                fields["warm_sandbox"] = warm_of(fields["previous_id"])  # the admin's choice
            won = Activation.objects.filter(pk=activation.pk, status=Status.PENDING).update(
                **fields)
            if not won:
                raise _already_decided(activation)
            activation.refresh_from_db()
            _decision_record(activation, user)
            if approve:  # the addresses entered already are part of what the decider saw
                addresses_approve_entered(activation=activation, user=user)
                previous = activation.previous.version if activation.previous else None
                activation_events_queue(team_id=activation.team_id, new=activation.version,
                                        old=previous)
    except IntegrityError as exc:  # another version was approved at the same moment
        raise ActivationError("Another version was activated at the same moment; reload the "
                              "page.") from exc
    return activation


def _already_decided(activation: Activation) -> approval_rules.AlreadyDecided:
    activation.refresh_from_db()
    who = activation.decided_by.get_username() if activation.decided_by else "someone"
    return approval_rules.AlreadyDecided(
        f"This activation was already decided ({activation.get_status_display().lower()}) "
        f"by {who}.")


def _retire_current(team: Team, plugin: Plugin, now: datetime) -> int | None:
    """Retire the activation in use (locked); its id, or None when there was none."""
    current = (Activation.objects.select_for_update()
               .filter(team=team, plugin=plugin, status=Status.ACTIVE).first())
    if current is None:
        return None
    Activation.objects.filter(pk=current.pk).update(status=Status.RETIRED, retired_at=now)
    return current.pk


def _decision_record(activation: Activation, user: User) -> None:
    approved = activation.status == Status.ACTIVE
    audit_record(actor=user, action="tool.activated" if approved else "tool.activation_refused",
                 team=activation.team, target=activation,
                 before={"version": activation.previous.version.version
                         if activation.previous else None},
                 after={"plugin": activation.plugin.name, "version": activation.version.version,
                        "comment": activation.comment})
    outcome = "approved, the tool is in use" if approved else "refused"
    message = (f"{user.get_username()} decided the activation of {activation.plugin.name} "
               f"{activation.version.version}: {outcome}.")
    notification_decided_send(user_id=activation.requested_by_id, team_id=activation.team_id,
                              actor=user, message=message, url=activation_url(activation))
    # "Upgrade waiting" notices for this version (tools/receivers.py) are settled by deciding
    notifications_review_settled(team_id=activation.team_id, url=reverse(
        "tools:activate", args=[activation.team.slug, activation.plugin.normalized_name,
                                activation.version.version]))


def activation_rollback(*, team: Team, plugin: Plugin, user: User) -> Activation:
    """Go back to the version in force before the current one. That version was approved
    already, so this is the admin's decision alone, recorded like one."""
    check_may_decide(team=team, user=user)
    current = (Activation.objects.select_related("previous__version")
               .filter(team=team, plugin=plugin, status=Status.ACTIVE).first())
    if current is None or current.previous is None:
        raise ActivationError("There is no earlier version to go back to.")
    target = current.previous.version
    _usable(team, target)
    now = timezone.now()
    with transaction.atomic():
        if not Activation.objects.filter(pk=current.pk, status=Status.ACTIVE).update(
                status=Status.RETIRED, retired_at=now):
            raise ActivationError("The version in use changed meanwhile; reload the page.")
        back = Activation.objects.create(
            team=team, plugin=plugin, version=target, status=Status.ACTIVE, previous=current,
            rollback=True, requested_by=user, decided_by=user, decided_at=now,
            warm_sandbox=current.warm_sandbox,
            comment=f"Rolled back from {current.version.version}.")
        audit_record(actor=user, action="tool.rolled_back", team=team, target=back,
                     before={"version": current.version.version},
                     after={"version": target.version})
        # the admin going back approves the addresses entered, as deciding an activation does
        addresses_approve_entered(activation=back, user=user)
        activation_events_queue(team_id=team.pk, new=target, old=current.version)
    return back


def activation_retire(*, team: Team, plugin: Plugin, user: User) -> bool:
    """Stop using the plugin (no version in use); settings, tokens and schedules stay for a
    later activation, but nothing can call it meanwhile."""
    check_may_decide(team=team, user=user)
    current = Activation.objects.filter(team=team, plugin=plugin, status=Status.ACTIVE).first()
    if current is None:
        return False
    with transaction.atomic():
        Activation.objects.filter(pk=current.pk).update(status=Status.RETIRED,
                                                        retired_at=timezone.now())
        audit_record(actor=user, action="tool.deactivated", team=team, target=current,
                     before={"version": current.version.version}, after=None)
        activation_events_queue(team_id=team.pk, new=None, old=current.version)
    return True
