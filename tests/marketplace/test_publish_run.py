"""Publishing the result of a generation run: the run's publish approval request is the gate,
and the version records its provenance (run, spec, models, iterations, test and safety reports).

The run rows are written here as the engine leaves them after a successful run; the iteration's
test report comes from the real pytest runner in the sandbox on the same files.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import PermissionDenied
from django.urls import reverse

from marketplace.models import Plugin, PluginVersion
from marketplace.proposals import PublishProposal, publish_payload
from marketplace.selectors.catalogue import catalogue_search, clean_params
from marketplace.selectors.visibility import viewer_for
from marketplace.services.gate import plugin_version_decide, publish_approval_decided
from marketplace.services.publishing import plugin_version_publish
from marketplace.validation import PackageError
from runs.approval_rules import approval_candidate
from runs.models import ApprovalRequest, Project, Run
from runs.services.approvals import approval_vote_cast
from teams.models import AuditEntry
from tests.marketplace.conftest import WORD_COUNT_SPEC, client_for, plugin_tree

pytestmark = pytest.mark.django_db


def propose(run: Run, **changes: str) -> ApprovalRequest:
    """The publish request asks for other settings (as if the run had finished with them)."""
    approval = publish_request(run)
    wanted = PublishProposal(**{"version": "0.1.0", "visibility": "team", "category": "other",
                                **changes})
    approval.payload = {**approval.payload,
                        **publish_payload(files=plugin_tree(), proposal=wanted)}
    approval.save(update_fields=["payload"])
    return approval


def publish_request(run: Run) -> ApprovalRequest:
    return ApprovalRequest.objects.get(run=run, kind=ApprovalRequest.Kind.PUBLISH)


def approve_on_the_approval_screen(run: Run, user: Any) -> ApprovalRequest:
    approval = publish_request(run)
    approval_vote_cast(approval=approval, user=user, decision="approve",
                       candidate=approval_candidate(approval))
    approval.refresh_from_db()
    return approval


def test_an_approved_run_is_published_with_its_provenance(market: dict, succeeded_run: Run,
                                                          sandbox_report: dict) -> None:
    propose(succeeded_run, visibility="public")
    approve_on_the_approval_screen(succeeded_run, market["reviewer"])
    version = plugin_version_publish(run=succeeded_run, user=market["requester"],
                                     visibility="public", tags=["text"])
    assert version.status == PluginVersion.Status.PUBLISHED
    assert version.run == succeeded_run and version.iterations == 3
    assert version.spec == WORD_COUNT_SPEC
    assert version.models_used == [
        {"role": "architect", "provider": "openai", "model": "plan-model", "calls": 1},
        {"role": "implementer", "provider": "openai", "model": "code-model", "calls": 2}]
    assert version.test_report == sandbox_report
    assert version.safety_report["verdict"] == "pass"
    assert version.commands[0]["examples"] == WORD_COUNT_SPEC["commands"][0]["examples"]
    assert version.artifacts.count() == 2
    published = AuditEntry.objects.get(action="plugin.publish")
    assert published.actor == market["reviewer"] and published.after["version"] == "0.1.0"
    page = catalogue_search(viewer=viewer_for(market["loner"]), params=clean_params(q="words"))
    assert [p.name for p in page.results] == ["word-count"]


def test_a_pending_publish_request_holds_the_version_until_a_reviewer_approves(
        market: dict, succeeded_run: Run) -> None:
    version = plugin_version_publish(run=succeeded_run, user=market["requester"],
                                     visibility="team", version="1.0.0")
    assert version.status == PluginVersion.Status.PENDING and version.version == "1.0.0"
    assert 'version = "1.0.0"' in version.files["plugin.toml"]
    assert Plugin.objects.get().latest_version is None

    with pytest.raises(PermissionDenied):
        plugin_version_decide(version=version, user=market["requester"], approve=True)
    decided = plugin_version_decide(version=version, user=market["admin"],
                                    approve=True, comment="ship it")
    assert decided.status == PluginVersion.Status.PUBLISHED
    approval = publish_request(succeeded_run)
    assert approval.status == ApprovalRequest.Status.APPROVED
    assert approval.decided_by == market["admin"]
    assert Project.objects.get().status == Project.Status.PUBLISHED
    assert Plugin.objects.get().latest_version == decided


def test_a_rejection_on_the_approval_screen_rejects_the_waiting_version(
        market: dict, succeeded_run: Run) -> None:
    version = plugin_version_publish(run=succeeded_run, user=market["requester"],
                                     visibility="team")
    approval = publish_request(succeeded_run)
    approval_vote_cast(approval=approval, user=market["reviewer"], decision="reject",
                       comment="not yet", candidate=approval_candidate(approval))
    approval.refresh_from_db()
    version.refresh_from_db()  # settled by the decision itself, no extra click
    assert version.status == PluginVersion.Status.REJECTED
    assert publish_approval_decided(approval=approval) == []  # idempotent
    assert Plugin.objects.get().published_at is None


def test_only_succeeded_runs_with_an_open_or_approved_request_are_published(
        market: dict, succeeded_run: Run) -> None:
    Run.objects.filter(pk=succeeded_run.pk).update(status=Run.Status.FAILED)
    succeeded_run.refresh_from_db()
    with pytest.raises(PackageError, match="is failed; only a succeeded run can be published"):
        plugin_version_publish(run=succeeded_run, user=market["requester"],
                               visibility="team")
    Run.objects.filter(pk=succeeded_run.pk).update(status=Run.Status.SUCCEEDED)
    succeeded_run.refresh_from_db()
    plugin_version_publish(run=succeeded_run, user=market["requester"],
                           visibility="team")
    with pytest.raises(PackageError, match="was already submitted to the marketplace"):
        plugin_version_publish(run=succeeded_run, user=market["requester"],
                               visibility="team")
    with pytest.raises(PermissionDenied):
        plugin_version_publish(run=succeeded_run, user=market["outsider"],
                               visibility="team")


def test_the_publish_page_is_for_the_run_team_only(market: dict, succeeded_run: Run) -> None:
    url = reverse("marketplace:publish_run", args=[succeeded_run.pk])
    assert client_for(market["outsider"]).get(url).status_code == 404
    member = client_for(market["requester"])
    assert member.get(url).status_code == 200
    response = member.post(url, {"version": "", "visibility": "team", "tags": "text"},
                           follow=True)
    assert response.status_code == 200
    assert "word-count 0.1.0: awaiting approval." in response.content.decode()
    assert reverse("approval_detail", args=[publish_request(succeeded_run).pk]) in (
        response.content.decode())
    # The request waits: the requester is not offered a second publish form.
    again = member.get(url, follow=True)
    html = again.content.decode()
    assert again.redirect_chain[-1][0] == reverse("marketplace:version",
                                                  args=["word-count", "0.1.0"])
    assert "waits for a reviewer" in html and 'name="visibility"' not in html


def test_a_request_approved_on_the_approval_screen_shows_the_version_published(
        market: dict, succeeded_run: Run) -> None:
    plugin_version_publish(run=succeeded_run, user=market["requester"],
                           visibility="team")
    approve_on_the_approval_screen(succeeded_run, market["reviewer"])
    member = client_for(market["requester"])
    url = reverse("marketplace:version", args=["word-count", "0.1.0"])
    page = member.get(url).content.decode()
    assert "Publish now" not in page and "awaiting approval" not in page
    assert Plugin.objects.get().latest_version.status == PluginVersion.Status.PUBLISHED


def test_approving_on_the_approval_screen_publishes_the_waiting_version(
        market: dict, succeeded_run: Run) -> None:
    version = plugin_version_publish(run=succeeded_run, user=market["requester"],
                                     visibility="team")
    approval = publish_request(succeeded_run)
    approval_vote_cast(approval=approval, user=market["reviewer"], decision="approve",
                       candidate=approval_candidate(approval))
    version.refresh_from_db()
    assert version.status == PluginVersion.Status.PUBLISHED
    assert Plugin.objects.get().latest_version == version
    assert Project.objects.get().status == Project.Status.PUBLISHED
