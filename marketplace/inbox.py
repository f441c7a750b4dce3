"""What the marketplace adds to the reviewer's inbox (projects/selectors/inbox.py): plugin
versions uploaded (or sent from the command line) that wait at the publish gate. Registered as an
"inbox_source" hook by MarketplaceConfig.ready."""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.urls import reverse

from marketplace.models import PluginVersion, VersionDecision
from marketplace.selectors.visibility import viewer_of, visible_q
from projects.selectors.inbox import InboxItem, InboxSource
from runs.approval_rules import decidable_uploads_q
from teams.models import Membership

UPLOAD = "upload"


def uploads_awaiting(user: User | AnonymousUser, memberships: list[Membership] | None = None
                     ) -> QuerySet[PluginVersion]:
    """Plugin versions uploaded to the marketplace (or sent from the command line) that wait
    at the publish gate in the user's teams, that the user may decide (`upload_refusal`) and
    see, and has not voted on. A run's version is left out: its gate is the run's publish
    request, which `approvals_awaiting` lists."""
    if not user.is_authenticated:
        return PluginVersion.objects.none()
    if memberships is None:
        memberships = list(Membership.objects.filter(user=user).select_related("team"))
    scope = Q(pk__in=[])
    for membership in memberships:
        allowed = decidable_uploads_q(membership=membership, team=membership.team)
        if allowed is not None:
            scope |= allowed & Q(plugin__team_id=membership.team_id)
    voted = Exists(VersionDecision.objects.filter(version=OuterRef("pk"), user_id=user.pk))
    return (PluginVersion.objects
            .filter(scope, visible_q(viewer_of(user.pk, memberships), "plugin__"),
                    status=PluginVersion.Status.PENDING, approval__isnull=True)
            .exclude(voted).select_related("plugin__team", "submitted_by").defer("files")
            .order_by("created_at"))


def upload_items(pks: list[int]) -> dict[int, InboxItem]:
    return {version.pk: upload_item(version) for version in PluginVersion.objects.select_related(
        "plugin__team", "submitted_by").defer("files").filter(pk__in=pks)}


def upload_item(version: PluginVersion) -> InboxItem:
    """An uploaded version as the inbox shows it; its decision is taken on its own page."""
    return InboxItem(
        what=f"Uploaded version {version.version}", subject=version.plugin.name,
        team=version.plugin.team.name,
        requested_by=version.submitted_by.get_username() if version.submitted_by else "",
        created_at=version.created_at, url=upload_url(version), source=UPLOAD)


def upload_url(version: PluginVersion) -> str:
    """Where an uploaded version is decided: its page, at its decision (the anchor also keeps
    a re-upload of a rejected number apart from the first one)."""
    page = reverse("marketplace:version", args=[version.plugin.normalized_name, version.version])
    return f"{page}#gate-{version.pk}"


INBOX_UPLOADS = InboxSource(name=UPLOAD, awaiting=uploads_awaiting, items=upload_items)
