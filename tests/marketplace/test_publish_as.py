"""A run's publish request covers one version, visibility and category, shown to the reviewer:
the requester publishes exactly an approved combination, and anything else goes back to the
reviewers. Three people: the requester, a reviewer of the team, and an outsider."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import PermissionDenied
from django.urls import reverse

from marketplace.models import Plugin, PluginVersion
from marketplace.selectors.visibility import plugin_for_viewer, viewer_for
from marketplace.services.gate import plugin_version_decide
from marketplace.services.publishing import plugin_version_publish
from runs.approval_rules import approval_candidate
from runs.models import ApprovalRequest, Project, Run
from runs.services import finishing
from runs.services.approvals import StaleCandidate, approval_vote_cast
from teams.models import AuditEntry
from tests.marketplace.conftest import client_for
from tests.marketplace.test_publish_run import approve_on_the_approval_screen, publish_request

pytestmark = pytest.mark.django_db


def publish_requests(run: Run) -> list[ApprovalRequest]:
    return list(ApprovalRequest.objects.filter(run=run, kind=ApprovalRequest.Kind.PUBLISH)
                .order_by("created_at", "pk"))


def approve(approval: ApprovalRequest, user: Any) -> None:
    approval_vote_cast(approval=approval, user=user, decision="approve",
                       candidate=approval_candidate(approval))


def outsider_sees_it(market: dict) -> bool:
    return plugin_for_viewer(viewer_for(market["outsider"]), "word-count") is not None


def test_the_request_shows_the_reviewer_what_they_approve(market: dict,
                                                          succeeded_run: Run) -> None:
    approval = publish_request(succeeded_run)
    assert approval.payload["publish_as"]["version"] == "0.1.0"
    assert approval.payload["publish_as"]["visibility"] == "team"
    url = reverse("approval_detail", args=[approval.pk])
    # The requester sees what the request asks for; the reviewer decides it with the choice
    # in the decision form, starting from it (approving publishes, in the same step).
    asked = client_for(market["requester"]).get(url).content.decode()
    assert "What you approve" in asked
    assert "Team (every member of the team)" in asked and "<strong>0.1.0</strong>" in asked
    page = client_for(market["reviewer"]).get(url).content.decode()
    assert "What you approve" in page
    assert '<input type="text" name="version" value="0.1.0"' in page
    assert '<option value="team" selected>Team (every member of the team)</option>' in page
    assert "Files the package index will serve" in page
    for served in ("word_count-0.1.0-py3-none-any.whl", "word_count-0.1.0.tar.gz",
                   "word_count/plugin.py", "word_count-0.1.0.dist-info/RECORD"):
        assert f"<code>{served}</code>" in page, served


def test_the_approved_combination_publishes_at_once(market: dict, succeeded_run: Run) -> None:
    approve_on_the_approval_screen(succeeded_run, market["reviewer"])
    page = client_for(market["requester"]).get(
        reverse("marketplace:publish_run", args=[succeeded_run.pk])).content.decode()
    assert "Approved: version 0.1.0, visibility team, category other." in page
    version = plugin_version_publish(run=succeeded_run, user=market["requester"],
                                     visibility="team", tags=["text"])
    assert version.status == PluginVersion.Status.PUBLISHED
    assert Plugin.objects.get().visibility == "team"
    assert not outsider_sees_it(market)
    assert len(publish_requests(succeeded_run)) == 1  # nobody was asked again
    # Once live, the run page no longer offers to publish; its link leads to the version.
    requester = client_for(market["requester"])
    run_page = requester.get(reverse("run_detail", args=[succeeded_run.pk])).content.decode()
    assert "Published: open it in the marketplace" in run_page
    assert "Publish to the marketplace" not in run_page
    again = requester.get(reverse("marketplace:publish_run", args=[succeeded_run.pk]))
    assert again.status_code == 302
    assert again["Location"] == reverse("marketplace:version",
                                        args=[version.plugin.normalized_name, version.version])


def test_the_requester_cannot_publish_as_public_what_was_approved_as_team(
        market: dict, succeeded_run: Run) -> None:
    approved = approve_on_the_approval_screen(succeeded_run, market["reviewer"])
    version = plugin_version_publish(run=succeeded_run, user=market["requester"],
                                     visibility="public")
    assert version.status == PluginVersion.Status.PENDING
    assert Plugin.objects.get().published_at is None and not outsider_sees_it(market)
    first, renewed = publish_requests(succeeded_run)
    assert first == approved and first.status == ApprovalRequest.Status.APPROVED
    assert renewed.status == ApprovalRequest.Status.PENDING and version.approval == renewed
    assert renewed.payload["publish_as"]["visibility"] == "public"
    assert AuditEntry.objects.filter(action="approval.publish_as_changed",
                                     actor=market["requester"]).exists()

    with pytest.raises(PermissionDenied):  # not by the requester's own say-so
        plugin_version_decide(version=version, user=market["requester"], approve=True)
    approve(renewed, market["reviewer"])
    version.refresh_from_db()
    assert version.status == PluginVersion.Status.PUBLISHED
    assert Plugin.objects.get().visibility == "public" and outsider_sees_it(market)


def test_the_requester_cannot_change_the_approved_version(market: dict,
                                                          succeeded_run: Run) -> None:
    approve_on_the_approval_screen(succeeded_run, market["reviewer"])
    version = plugin_version_publish(run=succeeded_run, user=market["requester"],
                                     visibility="team", version="2.0.0")
    assert (version.version, version.status) == ("2.0.0", PluginVersion.Status.PENDING)
    renewed = publish_requests(succeeded_run)[-1]
    assert renewed.payload["publish_as"]["version"] == "2.0.0"
    assert "word_count-2.0.0-py3-none-any.whl" in str(renewed.payload["served_files"])

    approval_vote_cast(approval=renewed, user=market["reviewer"], decision="reject",
                       comment="keep 0.1.0", candidate=approval_candidate(renewed))
    version.refresh_from_db()
    assert version.status == PluginVersion.Status.REJECTED
    # Only the new version was refused: the project stays approved, and the approved
    # combination still publishes.
    assert Project.objects.get().status == Project.Status.SUCCEEDED
    again = plugin_version_publish(run=succeeded_run, user=market["requester"],
                                   visibility="team")
    assert (again.version, again.status) == ("0.1.0", PluginVersion.Status.PUBLISHED)


def test_an_outsider_can_neither_publish_nor_ask(market: dict, succeeded_run: Run) -> None:
    approve_on_the_approval_screen(succeeded_run, market["reviewer"])
    with pytest.raises(PermissionDenied):
        plugin_version_publish(run=succeeded_run, user=market["outsider"],
                               visibility="public")
    url = reverse("marketplace:publish_run", args=[succeeded_run.pk])
    assert client_for(market["outsider"]).post(url, {"visibility": "public"}).status_code == 404
    assert len(publish_requests(succeeded_run)) == 1 and not PluginVersion.objects.exists()


def test_changing_a_pending_request_voids_a_decision_made_on_the_old_page(
        market: dict, succeeded_run: Run) -> None:
    approval = publish_request(succeeded_run)
    seen = approval_candidate(approval)  # the reviewer's page shows "team"
    version = plugin_version_publish(run=succeeded_run, user=market["requester"],
                                     visibility="public")
    approval.refresh_from_db()
    assert version.approval == approval and approval.payload["publish_as"]["visibility"] == (
        "public")
    with pytest.raises(StaleCandidate):
        approval_vote_cast(approval=approval, user=market["reviewer"], decision="approve",
                           candidate=seen)
    version.refresh_from_db()
    assert version.status == PluginVersion.Status.PENDING and not outsider_sees_it(market)


def test_a_version_that_differs_from_the_approval_is_never_published(
        market: dict, succeeded_run: Run) -> None:
    """Belt and braces: even a waiting version changed behind the service's back (here by a
    direct update) is rejected when the request is approved, not published."""
    version = plugin_version_publish(run=succeeded_run, user=market["requester"],
                                     visibility="team")
    PluginVersion.objects.filter(pk=version.pk).update(visibility="public")
    approve(publish_request(succeeded_run), market["reviewer"])
    version.refresh_from_db()
    assert version.status == PluginVersion.Status.REJECTED
    assert "not what the publish request approved" in version.decision_comment
    assert Plugin.objects.get().latest_version is None


def test_the_engine_asks_with_the_defaults_and_the_files_it_would_serve(
        market: dict, succeeded_run: Run) -> None:
    ApprovalRequest.objects.filter(run=succeeded_run).delete()
    finishing._request_publish(succeeded_run)
    payload = publish_request(succeeded_run).payload
    assert payload["publish_as"] == {"version": "0.1.0", "visibility": "team",
                                     "visibility_label": "Team (every member of the team)",
                                     "category": "other", "category_label": "Other"}
    wheel = payload["served_files"]["artifacts"][0]
    assert wheel["filename"] == "word_count-0.1.0-py3-none-any.whl"
    assert "word_count/plugin.toml" in wheel["members"]
    assert not [m for m in wheel["members"] if m.endswith(".pth")]
