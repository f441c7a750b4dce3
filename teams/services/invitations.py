"""Team invitations: the only way the portal adds someone to a team.

A team admin invites a user name or an e-mail address; the answer, the team page and the audit
log are the same whether an account answers to it or not. The invited person is told (the bell)
and accepts or declines on their invitations page; only acceptance makes them a member. An
invitation can be withdrawn while it waits and expires after `LIFETIME`.

Server-side set-ups (the demo team of `up`, management commands, the Django admin) add members
directly with `membership_add` (teams/services/teams.py); nothing a team admin can reach
does.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils import timezone

from teams.models import Invitation, Membership, Notification, Team
from teams.models.invitations import LIFETIME
from teams.services.audit import audit_record

Status = Invitation.Status
# The one answer to an invitation, whoever (if anyone) has that name.
SENT_MESSAGE = ("If an account with that name exists, it has been invited to {team}. The "
                "invitation waits for an answer for {days} days.")


class InvitationError(Exception):
    """An invitation that cannot be sent or answered; the message says why, in plain words."""


def invitation_send(*, team: Team, invited_as: str, role: str, actor: User) -> Invitation:
    """Invite whoever has the user name or e-mail address `invited_as` to `team` with `role`.
    Inviting the same name again renews its open invitation (new role, new expiry)."""
    name = invited_as.strip()
    if team.memberships.filter(user__username__iexact=name).exists():
        raise InvitationError(f"{name} is already in {team.name}.")
    user = _invitee(team, name)
    try:
        with transaction.atomic():
            invitation, fresh = _invitation_renew_or_create(team, name, user, role, actor)
            audit_record(actor=actor, action="team.invite", team=team, target=invitation,
                         after={"invited": name, "role": role})
    except IntegrityError:  # the same name invited at the same moment: that one counts
        invitation = Invitation.objects.get(team=team, invited_as__iexact=name,
                                            status=Status.PENDING)
        fresh = False
    if fresh and invitation.user_id is not None:
        _notify(invitation, invitation.user_id, actor)
    return invitation


def _invitee(team: Team, name: str) -> User | None:
    """The active account called `name`, or the only one with that e-mail address; None when
    there is none (or it is in the team already: nothing to accept)."""
    accounts = get_user_model().objects.filter(is_active=True)
    user = accounts.filter(username__iexact=name).first()
    if user is None and "@" in name:
        by_email = list(accounts.filter(email__iexact=name)[:2])
        user = by_email[0] if len(by_email) == 1 else None
    if user is None or team.memberships.filter(user=user).exists():
        return None
    return user


def _invitation_renew_or_create(team: Team, name: str, user: User | None, role: str,
                                actor: User) -> tuple[Invitation, bool]:
    """The team's pending invitation of `name` renewed, or a new one; True when the person
    was not already waiting on an open one (so they are told)."""
    now = timezone.now()
    existing = (Invitation.objects.select_for_update()
                .filter(team=team, invited_as__iexact=name, status=Status.PENDING).first())
    if existing is None:
        return Invitation.objects.create(team=team, invited_as=name, user=user, role=role,
                                         invited_by=actor, created_at=now,
                                         expires_at=now + LIFETIME), True
    was_open = existing.is_open and existing.user_id == (user.pk if user else None)
    existing.user, existing.role, existing.invited_by = user, role, actor
    existing.created_at, existing.expires_at = now, now + LIFETIME
    existing.save(update_fields=["user", "role", "invited_by", "created_at", "expires_at"])
    return existing, not was_open


def _invitation_url() -> str:
    return reverse("invitation_list")


def _notify(invitation: Invitation, user_id: int, actor: User) -> None:
    role = invitation.get_role_display().lower()
    message = (f"{actor.get_username()} invited you to join the team {invitation.team.name} "
               f"as {role}. Accept or decline it on your invitations page.")
    # No live event: the person is not on the team's socket, and an event there would tell
    # the team's members that an account has the name.
    Notification.objects.create(user_id=user_id, team=invitation.team,
                                kind=Notification.Kind.INVITATION, message=message[:300],
                                url=_invitation_url())


def _close_notices(invitation: Invitation) -> None:
    """The invited person's unread notices of this team's invitation count as read: there is
    nothing left to answer."""
    if invitation.user_id is None:
        return
    Notification.objects.filter(user_id=invitation.user_id, team_id=invitation.team_id,
                                kind=Notification.Kind.INVITATION, read_at=None
                                ).update(read_at=timezone.now())


def _answer(invitation: Invitation, status: str, *, user: User | None = None) -> bool:
    """Move an open invitation to `status`; False when it was answered, withdrawn or expired
    meanwhile (the row count says who won: accept and withdraw may race)."""
    rows = Invitation.objects.filter(pk=invitation.pk, status=Status.PENDING,
                                     expires_at__gt=timezone.now())
    if user is not None:
        rows = rows.filter(user=user)
    if not rows.update(status=status, answered_at=timezone.now()):
        return False
    invitation.refresh_from_db(fields=["status", "answered_at"])
    return True


@transaction.atomic
def invitation_accept(*, invitation: Invitation, user: User) -> Membership:
    """`user` joins the team with the invitation's role (a member already keeps their role)."""
    if not _answer(invitation, Status.ACCEPTED, user=user):
        raise InvitationError(_closed_words(invitation))
    membership, created = Membership.objects.get_or_create(
        team_id=invitation.team_id, user=user, defaults={"role": invitation.role})
    # Other open invitations of the same person to the same team are answered with this one.
    (Invitation.objects.filter(team_id=invitation.team_id, user=user, status=Status.PENDING)
     .exclude(pk=invitation.pk).update(status=Status.ACCEPTED, answered_at=timezone.now()))
    audit_record(actor=user, action="team.invitation_accept", team=invitation.team,
                 target=invitation, after={"user": user.get_username(),
                                           "role": membership.role, "joined": created})
    _close_notices(invitation)
    return membership


@transaction.atomic
def invitation_decline(*, invitation: Invitation, user: User) -> None:
    if not _answer(invitation, Status.DECLINED, user=user):
        raise InvitationError(_closed_words(invitation))
    audit_record(actor=user, action="team.invitation_decline", team=invitation.team,
                 target=invitation, after={"user": user.get_username()})
    _close_notices(invitation)


@transaction.atomic
def invitation_withdraw(*, invitation: Invitation, actor: User) -> None:
    """A team admin takes back an invitation that waits (an expired one may go too)."""
    rows = Invitation.objects.filter(pk=invitation.pk, team_id=invitation.team_id,
                                     status=Status.PENDING)
    if not rows.update(status=Status.WITHDRAWN, answered_at=timezone.now()):
        raise InvitationError("This invitation was already answered.")
    audit_record(actor=actor, action="team.invitation_withdraw", team=invitation.team,
                 target=invitation, before={"invited": invitation.invited_as,
                                            "role": invitation.role})
    _close_notices(invitation)


def _closed_words(invitation: Invitation) -> str:
    current = Invitation.objects.filter(pk=invitation.pk).values_list(
        "status", "expires_at").first()
    if current is None or current[0] == Status.WITHDRAWN:
        return "This invitation was withdrawn by the team's admins."
    if current[0] == Status.PENDING:
        return ("This invitation has expired. Ask an admin of the team to invite you "
                "again.")
    return f"You have already {current[0]} this invitation."

