"""Yanking a published version (PEP 592) and taking the yank back."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from marketplace.models import Plugin, PluginVersion
from marketplace.permissions import require_reviewer
from marketplace.services.gate import DecisionConflict
from marketplace.services.listing import plugin_listing_refresh
from marketplace.validation import PackageError
from teams.services.audit import audit_record

MAX_YANK_REASON_CHARS = 300


def plugin_version_yank(*, version: PluginVersion, user: User,
                        reason: str) -> PluginVersion:
    """Mark a published version yanked (PEP 592): pip skips it unless pinned exactly. The files
    stay, so existing pins keep installing; the reason is shown everywhere."""
    reason = " ".join(reason.split())
    if not reason:
        raise PackageError(["a yanked version needs a reason (users see it in pip's warning)"])
    if len(reason) > MAX_YANK_REASON_CHARS:
        raise PackageError([f"the reason must be at most {MAX_YANK_REASON_CHARS} characters"])
    require_reviewer(user, version.plugin.team)
    with transaction.atomic():
        won = PluginVersion.objects.filter(
            pk=version.pk, status=PluginVersion.Status.PUBLISHED, yanked=False).update(
            yanked=True, yank_reason=reason, yanked_at=timezone.now(), yanked_by=user)
        if not won:
            raise DecisionConflict(f"{version} is not a published, unyanked version")
        plugin = Plugin.objects.select_for_update().get(pk=version.plugin_id)
        plugin_listing_refresh(plugin=plugin)
        audit_record(actor=user, action="plugin.yank", team=plugin.team, target=version,
                     after={"reason": reason})
    version.refresh_from_db()
    return version


def plugin_version_unyank(*, version: PluginVersion, user: User) -> PluginVersion:
    require_reviewer(user, version.plugin.team)
    with transaction.atomic():
        won = PluginVersion.objects.filter(pk=version.pk, yanked=True).update(
            yanked=False, yank_reason="", yanked_at=None, yanked_by=None)
        if not won:
            raise DecisionConflict(f"{version} is not yanked")
        plugin = Plugin.objects.select_for_update().get(pk=version.plugin_id)
        plugin_listing_refresh(plugin=plugin)
        audit_record(actor=user, action="plugin.unyank", team=plugin.team, target=version)
    version.refresh_from_db()
    return version
