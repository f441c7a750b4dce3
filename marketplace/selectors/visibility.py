"""Who sees what, applied in every query through `visible_q` (docs/marketplace.md):
- public: everyone signed in to the portal, and the package index without a token;
- team: every member of the owner team, whatever their role;
- private: the owner team's reviewers and admins only.
Site staff get no extra reach here. Anything a viewer may not see is answered as missing (404).
Live events about a plugin follow the same rule (`event_roles`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Q, QuerySet
from django.http import HttpRequest

from marketplace.models import Plugin
from marketplace.validation import normalize_name
from teams.models import Membership
from teams.selectors.teams import request_memberships


@dataclass(frozen=True)
class Viewer:
    user_id: int | None = None
    member_of: frozenset[int] = frozenset()
    reviewer_of: frozenset[int] = frozenset()
    roles: dict[int, str] = field(default_factory=dict, compare=False)

    @property
    def is_anonymous(self) -> bool:
        return self.user_id is None

    def is_member(self, team_id: int) -> bool:
        return team_id in self.member_of

    def can_review(self, team_id: int) -> bool:
        return team_id in self.reviewer_of

    def is_admin(self, team_id: int) -> bool:
        return self.roles.get(team_id) == Membership.Role.ADMIN


ANONYMOUS = Viewer()


def viewer_for(user: AbstractBaseUser | AnonymousUser | None) -> Viewer:
    if user is None or not user.is_authenticated:
        return ANONYMOUS
    roles = dict(Membership.objects.filter(user_id=user.pk).values_list("team_id", "role"))
    return _viewer(user.pk, roles)


def request_viewer(request: HttpRequest) -> Viewer:
    """`viewer_for` the request's user, from the memberships the request has read already for
    the navigation (one query per page, not two)."""
    if not request.user.is_authenticated:
        return ANONYMOUS
    return viewer_of(request.user.pk, request_memberships(request))


def viewer_of(user_id: int | None, memberships: Iterable[Membership]) -> Viewer:
    """`viewer_for` from memberships the caller has read already (no query)."""
    return _viewer(user_id, {m.team_id: m.role for m in memberships})


# The roles of the owner team that see its private plugins.
REVIEWER_ROLES = frozenset({Membership.Role.REVIEWER, Membership.Role.ADMIN})


def _viewer(user_id: int | None, roles: dict[int, str]) -> Viewer:
    return Viewer(user_id=user_id, member_of=frozenset(roles),
                  reviewer_of=frozenset(t for t, role in roles.items() if role in REVIEWER_ROLES),
                  roles=roles)


def visible_q(viewer: Viewer, prefix: str = "") -> Q:
    q = Q(**{f"{prefix}visibility": Plugin.Visibility.PUBLIC})
    if viewer.member_of:
        q |= Q(**{f"{prefix}visibility": Plugin.Visibility.TEAM,
                  f"{prefix}team_id__in": sorted(viewer.member_of)})
    if viewer.reviewer_of:
        q |= Q(**{f"{prefix}visibility": Plugin.Visibility.PRIVATE,
                  f"{prefix}team_id__in": sorted(viewer.reviewer_of)})
    return q


def can_see(viewer: Viewer, plugin: Plugin) -> bool:
    if plugin.visibility == Plugin.Visibility.PUBLIC:
        return True
    if plugin.visibility == Plugin.Visibility.TEAM:
        return viewer.is_member(plugin.team_id)
    return viewer.can_review(plugin.team_id)


def event_roles(plugin: Plugin) -> frozenset[str] | None:
    """Who of the owner team's open pages may hear about `plugin` (live events go to that
    team's group): None for every member, or the roles that see a private plugin."""
    if plugin.visibility == Plugin.Visibility.PRIVATE:
        return frozenset(str(role) for role in REVIEWER_ROLES)
    return None


def plugins_visible(viewer: Viewer) -> QuerySet[Plugin]:
    """Plugins with at least one published version that `viewer` may see."""
    return Plugin.objects.filter(visible_q(viewer), published_at__isnull=False)


def plugin_for_viewer(viewer: Viewer, name: str) -> Plugin | None:
    """The plugin called `name` (any spelling) if the viewer may see it and it was published;
    team members also reach their team's plugins that are still awaiting their first approval."""
    plugin = (Plugin.objects.select_related("team", "latest_version")
              .filter(normalized_name=normalize_name(name)).first())
    if plugin is None or not can_see(viewer, plugin):
        return None
    if plugin.published_at is None and not viewer.is_member(plugin.team_id):
        return None
    return plugin
