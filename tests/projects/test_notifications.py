"""Reviewers hear about requests waiting for them: the bell, the list, marking read."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from projects.services.notifications import notifications_approval_requested
from teams.models import Notification
from tests.projects.portal_factories import ProjectFactory, approval_for, run_with_history
from tests.teams.conftest import Portal

pytestmark = pytest.mark.django_db


@pytest.fixture
def approval(portal: Portal, django_capture_on_commit_callbacks: Any) -> Any:
    run = run_with_history(project=ProjectFactory(team=portal.team, requester=portal.requester,
                                                  name="invoice-parser"))
    with django_capture_on_commit_callbacks(execute=True):
        return approval_for(run)


def test_reviewers_and_admins_are_notified_requesters_are_not(portal: Portal,
                                                              approval: Any) -> None:
    users = set(Notification.objects.values_list("user__username", flat=True))
    assert users == {"rita", "alice"}
    note = Notification.objects.get(user=portal.reviewer)
    assert note.message == "Review needed: change of “invoice-parser” (attempt 2)."
    assert note.url == reverse("approval_detail", args=[approval.pk])


def test_requester_is_notified_when_the_team_lets_them_decide(
        portal: Portal, django_capture_on_commit_callbacks: Any) -> None:
    portal.team.requester_may_approve = True
    portal.team.save()
    run = run_with_history(project=ProjectFactory(team=portal.team, requester=portal.requester))
    with django_capture_on_commit_callbacks(execute=True):
        approval_for(run)
    assert set(Notification.objects.values_list("user__username", flat=True)) == {
        "rita", "alice", "quinn"}


def test_nav_shows_reviews_count_and_unread_bell(portal: Portal, approval: Any) -> None:
    html = portal.client(portal.reviewer).get(reverse("home")).content.decode()
    assert 'aria-label="1 waiting for you"' in html
    assert 'aria-label="Notifications, 1 unread"' in html
    assert reverse("board", args=["acme"]) in html  # Board link for the current team
    requester_html = portal.client(portal.requester).get(reverse("home")).content.decode()
    assert "waiting for you" not in requester_html and "unread" not in requester_html


def test_bell_fragment_for_live_refresh(portal: Portal, approval: Any) -> None:
    html = portal.client(portal.reviewer).get(reverse("notification_bell")).content.decode()
    assert html.startswith('<li id="nav-portal"') and "1 unread" in html


def test_list_open_marks_read_and_redirects(portal: Portal, approval: Any) -> None:
    client = portal.client(portal.reviewer)
    listing = client.get(reverse("notification_list")).content.decode()
    assert "Review needed: change of “invoice-parser”" in listing and "unread" in listing
    note = Notification.objects.get(user=portal.reviewer)
    opened = client.get(reverse("notification_open", args=[note.pk]))
    assert opened.status_code == 302
    assert opened["Location"] == reverse("approval_detail", args=[approval.pk])
    note.refresh_from_db()
    assert note.is_read
    assert "All caught up" in client.get(reverse("notification_list") + "?unread=1"
                                         ).content.decode()


def test_mark_read_and_mark_all(portal: Portal, approval: Any) -> None:
    admin = portal.client(portal.admin)
    note = Notification.objects.get(user=portal.admin)
    assert admin.post(reverse("notification_read", args=[note.pk])).status_code == 302
    note.refresh_from_db()
    assert note.is_read
    reviewer_note = Notification.objects.get(user=portal.reviewer)
    assert admin.post(reverse("notification_read", args=[reviewer_note.pk])).status_code == 404
    assert admin.get(reverse("notification_open", args=[reviewer_note.pk])).status_code == 404
    portal.client(portal.reviewer).post(reverse("notifications_read_all"))
    assert not Notification.objects.filter(read_at=None).exists()


def test_notifying_twice_adds_nothing(portal: Portal, approval: Any) -> None:
    assert notifications_approval_requested(approval=approval) == 0
    assert Notification.objects.count() == 2


def test_empty_list_explains_itself(portal: Portal) -> None:
    html = portal.client(portal.colleague).get(reverse("notification_list")).content.decode()
    assert "No notifications yet" in html


def test_list_is_paginated(portal: Portal) -> None:
    Notification.objects.bulk_create([Notification(user=portal.reviewer, team=portal.team,
                                                   kind="review_requested", message=f"n{i}")
                                      for i in range(65)])
    html = portal.client(portal.reviewer).get(reverse("notification_list")).content.decode()
    assert "Page 1 of 3" in html


def test_the_requester_hears_the_decision_with_the_reviewers_words(portal: Portal,
                                                                   approval: Any) -> None:
    from runs.approval_rules import approval_candidate

    portal.client(portal.reviewer).post(reverse("approval_decide", args=[approval.pk]), {
        "decision": "request_changes", "candidate": approval_candidate(approval),
        "comment": "Handle an empty invoice:\n  return an empty list instead of failing."})
    note = Notification.objects.get(user=portal.requester)
    assert note.message == (
        "rita decided the change request of “invoice-parser”: changes requested. Comment: "
        "“Handle an empty invoice: return an empty list instead of failing.”")
    bell = portal.client(portal.requester).get(reverse("notification_list")).content.decode()
    assert "return an empty list instead of failing." in bell


def test_a_long_comment_is_shortened_to_fit_and_whole_on_the_page(portal: Portal,
                                                                  approval: Any) -> None:
    from runs.approval_rules import approval_candidate

    words = "Please rename the command and keep the old name working for a while. " * 10
    portal.client(portal.reviewer).post(reverse("approval_decide", args=[approval.pk]), {
        "decision": "reject", "candidate": approval_candidate(approval), "comment": words})
    note = Notification.objects.get(user=portal.requester)
    assert len(note.message) <= 300 and note.message.endswith("…”")
    assert "Comment: “Please rename the command" in note.message
    page = portal.client(portal.requester).get(note.url).content.decode()
    assert words.strip() in page


def test_a_decided_request_leaves_every_bell_so_the_bell_counts_what_waits(
        portal: Portal, approval: Any) -> None:
    """The probe's reviewer had 9 unread in the bell against 1 in Reviews: decided requests
    stayed "Review needed" for everyone who had not opened them."""
    from runs.approval_rules import approval_candidate

    assert Notification.objects.filter(user=portal.admin, read_at=None).count() == 1
    portal.client(portal.reviewer).post(reverse("approval_decide", args=[approval.pk]), {
        "decision": "approve", "candidate": approval_candidate(approval), "comment": ""})
    approval.refresh_from_db()
    assert approval.status != "pending"
    # The admin never opened it: it no longer waits, so it no longer counts as unread.
    assert not Notification.objects.filter(user=portal.admin, read_at=None,
                                           kind=Notification.Kind.REVIEW_REQUESTED).exists()
    html = portal.client(portal.admin).get(reverse("home")).content.decode()
    assert "unread" not in html and "waiting for you" not in html
    # The list keeps it, read, for whoever looks back.
    assert Notification.objects.filter(user=portal.admin, approval=approval).exists()


def test_a_replaced_request_leaves_the_bell_too(portal: Portal, approval: Any,
                                                django_capture_on_commit_callbacks: Any) -> None:
    from runs import signals

    signals.approvals_superseded.send(sender=None, approval=approval, replaced=[approval.pk])
    assert not Notification.objects.filter(read_at=None,
                                           kind=Notification.Kind.REVIEW_REQUESTED).exists()


def test_a_notice_about_a_gate_says_how_it_was_decided_and_goes_with_it(
        portal: Portal, approval: Any) -> None:
    """The notice's subject is the gate (a generic target): the list says the gate's outcome,
    and removing the gate removes its notices."""
    from runs.approval_rules import approval_candidate

    portal.client(portal.reviewer).post(reverse("approval_decide", args=[approval.pk]), {
        "decision": "reject", "candidate": approval_candidate(approval), "comment": "No."})
    listed = portal.client(portal.admin).get(reverse("notification_list")).content.decode()
    assert "now rejected" in listed
    assert Notification.objects.get(user=portal.admin).target == approval
    approval.delete()
    assert not Notification.objects.exists()  # the requester's "decided" notice too
