"""Adding someone to a team is an invitation they accept: a team admin invites a user name or
an e-mail address and is told the same whether an account has it or not; the invited person
sees it in the bell and on their invitations page, and only their acceptance makes them a
member. Invitations are audited, can be withdrawn and expire.

Three users per rule: the team's admin (alice), a member (quinn, requester) and an outsider
(otto, admin of another team); the invited person is a fourth, in no team."""

from __future__ import annotations

import html
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from teams.models import AuditEntry, Invitation, Membership, Notification
from teams.selectors.notifications import unread_count
from tests.factories import UserFactory
from tests.teams.conftest import Portal

pytestmark = pytest.mark.django_db

SAME_ANSWER = "If an account with that name exists, it has been invited to Acme."


def invite(portal: Portal, name: str, role: str = "requester") -> str:
    """What the team admin reads after inviting `name` (the page they land on)."""
    response = portal.client(portal.admin).post(
        reverse("team_invite", args=["acme"]), {"invited_as": name, "role": role}, follow=True)
    assert response.status_code == 200
    return html.unescape(response.content.decode())


def test_an_invited_person_becomes_a_member_only_when_they_accept(portal: Portal) -> None:
    ivy = UserFactory(username="ivy")
    page = invite(portal, "Ivy", role="reviewer")
    assert SAME_ANSWER in page
    assert not Membership.objects.filter(team=portal.team, user=ivy).exists()

    notice = Notification.objects.get(user=ivy, kind=Notification.Kind.INVITATION)
    assert "alice invited you to join the team Acme as reviewer" in notice.message
    assert unread_count(ivy) == 1
    invitee = portal.client(ivy)
    listing = invitee.get(reverse("invitation_list")).content.decode()
    assert "Acme" in listing and "reviewer" in listing
    assert invitee.get(reverse("team_detail", args=["acme"])).status_code == 404

    invitation = Invitation.objects.get(team=portal.team)
    accepted = invitee.post(reverse("invitation_accept", args=[invitation.pk]), follow=True)
    assert "Welcome to Acme: you are reviewer here." in html.unescape(accepted.content.decode())
    assert Membership.objects.get(team=portal.team, user=ivy).role == "reviewer"
    assert unread_count(ivy) == 0, "the notice is answered"
    actions = set(AuditEntry.objects.filter(team=portal.team).values_list("action", flat=True))
    assert {"team.invite", "team.invitation_accept"} <= actions
    accept = AuditEntry.objects.get(action="team.invitation_accept")
    assert accept.actor_id == ivy.pk and accept.after["role"] == "reviewer"


def test_the_answer_is_the_same_whether_an_account_has_the_name_or_not(portal: Portal) -> None:
    UserFactory(username="ivy", email="ivy@example.com")
    real, unknown = invite(portal, "ivy"), invite(portal, "nobody-here")
    by_email, unknown_email = invite(portal, "ivy@example.com"), invite(portal, "x@example.org")
    for page in (real, unknown, by_email, unknown_email):
        assert SAME_ANSWER in page and "No account" not in page
    # The team page lists all four alike: what was typed, waiting for an answer.
    listing = Invitation.objects.filter(team=portal.team)
    assert listing.count() == 4
    assert {row.state for row in listing} == {"Waiting for an answer"}
    # The audit log does not tell them apart either.
    entries = AuditEntry.objects.filter(action="team.invite").order_by("id")
    shapes = {(e.target_type, tuple(sorted(e.after)), e.target_repr.startswith("invitation of"))
              for e in entries}
    assert len(shapes) == 1 and entries.count() == 4
    # Only the real account is told (once per invitation: its name and its address).
    told = Notification.objects.filter(kind=Notification.Kind.INVITATION)
    assert sorted(told.values_list("user__username", flat=True)) == ["ivy", "ivy"]


def test_an_invitation_can_be_declined(portal: Portal) -> None:
    ivy = UserFactory(username="ivy")
    invite(portal, "ivy")
    invitation = Invitation.objects.get(team=portal.team)
    response = portal.client(ivy).post(reverse("invitation_decline", args=[invitation.pk]),
                                       follow=True)
    assert "You declined the invitation to Acme." in html.unescape(response.content.decode())
    assert not Membership.objects.filter(team=portal.team, user=ivy).exists()
    assert AuditEntry.objects.get(action="team.invitation_decline").actor_id == ivy.pk
    team_page = portal.client(portal.admin).get(reverse("team_detail", args=["acme"]))
    assert "Declined" in team_page.content.decode()
    again = portal.client(ivy).post(reverse("invitation_accept", args=[invitation.pk]))
    assert again.status_code == 302
    assert not Membership.objects.filter(team=portal.team, user=ivy).exists()


def test_a_withdrawn_invitation_cannot_be_accepted(portal: Portal) -> None:
    ivy = UserFactory(username="ivy")
    invite(portal, "ivy")
    invitation = Invitation.objects.get(team=portal.team)
    withdraw = reverse("team_invitation_withdraw", args=["acme", invitation.pk])
    page = portal.client(portal.admin).post(withdraw, follow=True).content.decode()
    assert "The invitation of ivy is withdrawn." in html.unescape(page)
    assert AuditEntry.objects.get(action="team.invitation_withdraw").actor_id == portal.admin.pk
    assert unread_count(ivy) == 0, "nothing is left to answer"

    invitee = portal.client(ivy)
    refused = invitee.post(reverse("invitation_accept", args=[invitation.pk]), follow=True)
    assert "This invitation was withdrawn" in html.unescape(refused.content.decode())
    assert not Membership.objects.filter(team=portal.team, user=ivy).exists()
    assert "No invitations waiting" in invitee.get(reverse("invitation_list")).content.decode()


def test_an_invitation_expires(portal: Portal) -> None:
    ivy = UserFactory(username="ivy")
    invite(portal, "ivy")
    invitation = Invitation.objects.get(team=portal.team)
    assert invitation.expires_at - invitation.created_at == timedelta(days=14)
    Invitation.objects.filter(pk=invitation.pk).update(
        expires_at=timezone.now() - timedelta(seconds=1))

    invitee = portal.client(ivy)
    assert "No invitations waiting" in invitee.get(reverse("invitation_list")).content.decode()
    refused = invitee.post(reverse("invitation_accept", args=[invitation.pk]), follow=True)
    assert "This invitation has expired" in html.unescape(refused.content.decode())
    assert not Membership.objects.filter(team=portal.team, user=ivy).exists()
    team_page = portal.client(portal.admin).get(reverse("team_detail", args=["acme"]))
    assert "Expired" in team_page.content.decode()
    # Inviting again renews it: one open invitation, and the person is told again.
    invite(portal, "ivy")
    renewed = Invitation.objects.get(team=portal.team)
    assert renewed.pk == invitation.pk and renewed.is_open
    assert Notification.objects.filter(user=ivy, kind="invitation").count() == 2


def test_inviting_again_renews_the_open_invitation_without_a_second_notice(
        portal: Portal) -> None:
    ivy = UserFactory(username="ivy")
    invite(portal, "ivy")
    invite(portal, "IVY", role="admin")
    invitation = Invitation.objects.get(team=portal.team)
    assert invitation.role == "admin"
    assert Notification.objects.filter(user=ivy, kind="invitation").count() == 1


def test_only_the_teams_admins_invite_and_withdraw(portal: Portal) -> None:
    UserFactory(username="ivy")
    url = reverse("team_invite", args=["acme"])
    data = {"invited_as": "ivy", "role": "admin"}
    assert portal.client(portal.requester).post(url, data).status_code == 403
    assert portal.client(portal.outsider).post(url, data).status_code == 404
    assert not Invitation.objects.exists()
    page = portal.client(portal.requester).get(reverse("team_detail", args=["acme"]))
    assert "Invite someone" not in page.content.decode()

    invite(portal, "ivy")
    invitation = Invitation.objects.get(team=portal.team)
    withdraw = reverse("team_invitation_withdraw", args=["acme", invitation.pk])
    assert portal.client(portal.requester).post(withdraw).status_code == 403
    assert portal.client(portal.outsider).post(withdraw).status_code == 404
    assert Invitation.objects.get(pk=invitation.pk).is_open


def test_only_the_invited_person_answers_their_invitation(portal: Portal) -> None:
    UserFactory(username="ivy")
    invite(portal, "ivy")
    invitation = Invitation.objects.get(team=portal.team)
    for user in (portal.admin, portal.requester, portal.outsider):
        client = portal.client(user)
        for name in ("invitation_accept", "invitation_decline"):
            assert client.post(reverse(name, args=[invitation.pk])).status_code == 404
        assert "No invitations waiting" in client.get(reverse("invitation_list")).content.decode()
    assert Invitation.objects.get(pk=invitation.pk).is_open
    assert not Membership.objects.filter(team=portal.team, user__username="ivy").exists()


def test_a_team_admin_cannot_put_the_site_admin_in_their_team(portal: Portal) -> None:
    site_admin = UserFactory(username="root", is_staff=True, is_superuser=True)
    assert SAME_ANSWER in invite(portal, "root", role="admin")
    assert not Membership.objects.filter(user=site_admin).exists()
    # The old door that added any account at once is gone.
    old = portal.client(portal.admin).post("/t/acme/members/add/",
                                           {"username": "root", "role": "admin"})
    assert old.status_code == 404
    assert not Membership.objects.filter(user=site_admin).exists()


def test_a_member_is_not_invited_again(portal: Portal) -> None:
    page = invite(portal, "Quinn")
    assert "Quinn is already in Acme." in page
    assert not Invitation.objects.exists()


def test_accepting_keeps_the_role_of_someone_who_joined_meanwhile(portal: Portal) -> None:
    ivy = UserFactory(username="ivy")
    invite(portal, "ivy", role="admin")
    Membership.objects.create(team=portal.team, user=ivy, role="requester")
    invitation = Invitation.objects.get(team=portal.team)
    portal.client(ivy).post(reverse("invitation_accept", args=[invitation.pk]))
    assert Membership.objects.get(team=portal.team, user=ivy).role == "requester"
