"""The tools app's answers to the signals of the apps below it, which import nothing of it:
the portal's (teams/signals.py) and the marketplace's (marketplace/signals.py)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.dispatch import receiver
from django.urls import reverse
from packaging.version import InvalidVersion, Version

from marketplace.models import Plugin, PluginVersion
from marketplace.signals import version_published
from runs import approval_rules
from teams.models import Team
from teams.services.notifications import notifications_review_requested
from teams.signals import membership_removed
from tools.models import Activation, ChangeRequest


@receiver(membership_removed, dispatch_uid="tools.membership_removed")
def member_left(sender: Any, team: Team, user: User, actor: User | None = None,
                **kwargs: Any) -> None:
    from tools.services.schedules import schedules_owner_left

    schedules_owner_left(team=team, user=user, actor=actor)


@receiver(version_published, dispatch_uid="tools.version_published")
def version_went_live(sender: Any, version: PluginVersion, approver: User | None = None,
                      **kwargs: Any) -> None:
    """A change run's version is out: its change requests are shipped (their askers told);
    and every team using an older version hears that an upgrade waits (nothing changes for
    a team until one of its admins upgrades, on the activation page with its diff)."""
    from tools.services.changes import change_request_shipped

    project = version.run.project if version.run_id and version.run else None
    if project is not None and ChangeRequest.objects.filter(project=project).exists():
        change_request_shipped(project)
    upgrades_waiting_tell(version)


def _older(version: str, than: str) -> bool:
    try:
        return Version(version) < Version(than)
    except InvalidVersion:
        return False


def upgrades_waiting_tell(version: PluginVersion) -> int:
    """Tell who may decide activations in each team using an older version of `version`'s
    plugin that `version` is out, with a link to its upgrade (the activation page, which
    shows what changes). Teams that may not use it (another team's plugin that is not
    public) are not told. Returns how many notices were created."""
    plugin = version.plugin
    told = 0
    using = (Activation.objects.filter(plugin=plugin, status=Activation.Status.ACTIVE)
             .select_related("team", "version"))
    for activation in using:
        team = activation.team
        if not _older(activation.version.version, version.version):
            continue
        if team.pk != plugin.team_id and plugin.visibility != Plugin.Visibility.PUBLIC:
            continue
        url = reverse("tools:activate", args=[team.slug, plugin.normalized_name,
                                              version.version])
        told += notifications_review_requested(
            team=team, users=approval_rules.activation_deciders(team=team), url=url,
            message=f"Upgrade waiting: {plugin.name} {version.version} is out (your team uses "
                    f"{activation.version.version}). Nothing changes until a team admin "
                    "upgrades it, after reading what changes.")
    return told
