"""Writes for the projects app: keyword-only, typed, named <entity>_<action>."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.db import transaction

from teams import signals
from teams.models import Membership, Team
from teams.selectors.site import team_budget_defaults, team_creation_allowed
from teams.services.audit import audit_record

DEMO_TEAM_SLUG = "demo"
DEMO_USERS: tuple[tuple[str, str], ...] = (
    ("requester", Membership.Role.REQUESTER),
    ("reviewer", Membership.Role.REVIEWER),
    ("admin", Membership.Role.ADMIN),
)


@dataclass(frozen=True)
class DemoData:
    team: Team
    created: bool
    usernames: tuple[str, ...]


class MembershipError(Exception):
    """A change to a team's members that cannot be made; the message says why, in plain words."""


class TeamCreationRefused(PermissionDenied):
    """The site lets only its admins start teams (teams/selectors/site.py)."""


TEAM_CREATION_REFUSED = ("Only site administrators can start a team here. Ask one to start it "
                         "for you; its admins can then invite you.")


def team_create(*, name: str, slug: str, creator: User) -> Team:
    """A new team with `creator` as its first admin, starting with the site's default budgets;
    refused (TeamCreationRefused) when the site does not let `creator` start teams."""
    if not team_creation_allowed(creator):
        raise TeamCreationRefused(TEAM_CREATION_REFUSED)
    budgets = team_budget_defaults()
    with transaction.atomic():
        team = Team.objects.create(name=name, slug=slug, **budgets)
        Membership.objects.create(team=team, user=creator, role=Membership.Role.ADMIN)
        audit_record(actor=creator, action="team.create", team=team, target=team,
                     after={"name": name, "slug": slug, **budgets})
    return team


def membership_add(*, team: Team, user: User, role: str,
                   actor: User | None = None) -> Membership:
    """Put `user` in `team` with `role` (a member already in it keeps their place, new role).

    Server-side only (management commands, benchmarks, demo set-ups): it asks nobody. In the
    portal a team admin invites people instead (teams/services/invitations.py)."""
    with transaction.atomic():
        existing = (Membership.objects.select_for_update()
                    .filter(team=team, user=user).first())
        if existing is not None:
            return membership_role_change(membership=existing, role=role, actor=actor)
        membership = Membership.objects.create(team=team, user=user, role=role)
        if actor is not None:
            audit_record(actor=actor, action="team.member_add", team=team, target=membership,
                         after={"user": user.get_username(), "role": role})
    return membership


@transaction.atomic
def membership_role_change(*, membership: Membership, role: str,
                           actor: User | None = None) -> Membership:
    locked = _locked_admins(membership.team_id)
    before = membership.role
    if before == role:
        return membership
    if before == Membership.Role.ADMIN and locked == [membership.pk]:
        raise MembershipError("A team needs at least one admin: make someone else admin first.")
    membership.role = role
    membership.save(update_fields=["role"])
    audit_record(actor=actor, action="team.member_role", team=membership.team,
                 target=membership, before={"role": before}, after={"role": role})
    return membership


@transaction.atomic
def membership_remove(*, membership: Membership, actor: User | None = None) -> None:
    """Take a member out of the team: their open pages stop receiving its events within
    WEBSOCKET_MEMBERSHIP_RECHECK_S, and its pages answer 404 from now on. The apps built on
    the portal hear of it (`membership_removed`: the tools pause the member's schedules)."""
    if _locked_admins(membership.team_id) == [membership.pk]:
        raise MembershipError("A team needs at least one admin: make someone else admin "
                              "before removing the last one.")
    audit_record(actor=actor, action="team.member_remove", team=membership.team,
                 target=membership, before={"user": membership.user.get_username(),
                                            "role": membership.role})
    membership.delete()
    signals.membership_removed.send(sender=Membership, team=membership.team,
                                    user=membership.user, actor=actor)


def _locked_admins(team_id: int) -> list[int]:
    """The team's admin memberships, locked: two admins demoting each other at once must not
    leave the team without one."""
    return list(Membership.objects.select_for_update()
                .filter(team_id=team_id, role=Membership.Role.ADMIN)
                .order_by("pk").values_list("pk", flat=True))


@transaction.atomic
def team_settings_update(*, team: Team, requester_may_approve: bool, required_approvals: int,
                         monthly_budget: Decimal | None = None,
                         run_budget: Decimal | None = None,
                         actor: User | None = None) -> Team:
    """Save the team's settings; the budgets (empty: no limit) apply to runs that start from
    now on (a run keeps the run budget it started with) and to this month's spending."""
    fields = ["requester_may_approve", "required_approvals", "monthly_budget", "run_budget"]
    # From the database: a bound ModelForm has already copied the new values onto `team`.
    before = Team.objects.select_for_update().values(*fields).get(pk=team.pk)
    team.requester_may_approve = requester_may_approve
    team.required_approvals = required_approvals
    team.monthly_budget, team.run_budget = monthly_budget, run_budget
    team.save(update_fields=fields)
    # The audit entry names what changed, before and after.
    changed = [field for field in fields if getattr(team, field) != before[field]]
    if changed:
        audit_record(actor=actor, action="team.settings_update", team=team, target=team,
                     before={field: before[field] for field in changed},
                     after={field: getattr(team, field) for field in changed})
    return team


@transaction.atomic
def demo_data_ensure(*, password: str) -> DemoData:
    """Create the demo team and its three users once; later calls change nothing. The users
    are put in the team directly, server-side (nobody is there yet to accept an invitation)."""
    team, created = Team.objects.get_or_create(
        slug=DEMO_TEAM_SLUG, defaults={"name": "Demo team", **team_budget_defaults()})
    user_model = get_user_model()
    hashed = ""
    for username, role in DEMO_USERS:
        user, user_created = user_model.objects.get_or_create(
            username=username, defaults={"email": f"{username}@example.com"})
        if user_created:
            # One hash for the three (about 0.25 s each, on a first start's critical path): they
            # share the demo password, which `up` prints anyway.
            hashed = hashed or make_password(password)
            user.password = hashed
            # The demo admin also administers the whole site (per-team settings in the admin).
            user.is_staff = user.is_superuser = role == Membership.Role.ADMIN
            user.save()
        Membership.objects.get_or_create(team=team, user=user, defaults={"role": role})
    return DemoData(team=team, created=created, usernames=tuple(u for u, _ in DEMO_USERS))
