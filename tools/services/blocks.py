"""The kill switch: a site admin disables a plugin version everywhere at once (a malicious
version found later). Calls check for the block when they start, so the next call of any team
is refused; every team that uses or asked to use the version is told, and the audit log has
it (once for the installation, once in each such team's log)."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.db import IntegrityError, transaction
from django.urls import reverse

from marketplace.models import PluginVersion
from teams.models import Membership, Team
from teams.services.audit import audit_record
from teams.services.notifications import notifications_review_requested
from tools.models import Activation, VersionBlock
from tools.services.tool_changes import tools_changed_announce

MAX_REASON_CHARS = 500


class BlockError(Exception):
    """The kill switch cannot be used as asked; `str()` says why."""


def _staff_only(user: User) -> None:
    if not (user.is_active and user.is_staff):
        raise PermissionDenied("Only site administrators disable a plugin version everywhere.")


def version_block(*, version: PluginVersion, user: User, reason: str) -> VersionBlock:
    _staff_only(user)
    reason = " ".join(reason.split())
    if not reason:
        raise BlockError("Say why (the teams that use it are told).")
    if len(reason) > MAX_REASON_CHARS:  # refused, not cut: the teams read all of it
        raise BlockError(f"Please say why in at most {MAX_REASON_CHARS} characters (it has "
                         f"{len(reason)}).")
    try:
        with transaction.atomic():
            block = VersionBlock.objects.create(version=version, blocked_by=user,
                                                reason=reason)
            teams = _teams_using(version)
            after = {"plugin": version.plugin.name, "version": version.version, "reason": reason}
            audit_record(actor=user, action="tool.version_disabled", team=None,
                         target=version, after={**after, "teams": len(teams)})
            for team in teams:
                audit_record(actor=user, action="tool.version_disabled", team=team,
                             target=version, after=after)
                _admins_notify(team, version, reason)
            tools_changed_announce(team_ids=[team.pk for team in teams])
    except IntegrityError as exc:
        raise BlockError("This version is disabled already.") from exc
    return block


def version_unblock(*, version: PluginVersion, user: User) -> bool:
    """Lift the kill switch (a false alarm); audited like the block."""
    _staff_only(user)
    with transaction.atomic():
        deleted, _ = VersionBlock.objects.filter(version=version).delete()
        if deleted:
            audit_record(actor=user, action="tool.version_enabled", team=None, target=version,
                         after={"plugin": version.plugin.name, "version": version.version})
            tools_changed_announce(team_ids=[team.pk for team in _teams_using(version)])
    return bool(deleted)


def _teams_using(version: PluginVersion) -> list[Team]:
    team_ids = (Activation.objects.filter(version=version, status__in=[
        Activation.Status.ACTIVE, Activation.Status.PENDING]).values_list("team_id", flat=True))
    return list(Team.objects.filter(pk__in=set(team_ids)).order_by("pk"))


def _admins_notify(team: Team, version: PluginVersion, reason: str) -> None:
    admins = [m.user for m in Membership.objects.select_related("user")
              .filter(team=team, role=Membership.Role.ADMIN)]
    url = reverse("tools:list", args=[team.slug])
    message = (f"{version.plugin.name} {version.version} was disabled everywhere by a site "
               f"administrator: {reason}")
    notifications_review_requested(team=team, users=admins, message=message,
                                   url=f"{url}?disabled={version.pk}")
