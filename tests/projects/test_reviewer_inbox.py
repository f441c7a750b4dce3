"""One reviewer inbox: everything that waits for a decision (a run's gates and plugin versions
uploaded to the marketplace) is in Reviews, in the bell and on the home page, each linking to
where it is decided; only people the approval rules let decide are offered a decision."""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from marketplace.models import Plugin, PluginVersion
from marketplace.services.checking import plugin_version_check
from marketplace.services.gate import plugin_version_decide
from projects.selectors.inbox import inbox_count, inbox_page
from runs import approval_rules as rules
from runs.models import ApprovalRequest, Project, Run
from teams.models import Membership, Notification
from tests.marketplace.conftest import plugin_tree, zip_bytes
from tests.projects.portal_factories import ProjectFactory, approval_for, run_with_history
from tests.teams.conftest import Portal

pytestmark = pytest.mark.django_db


@pytest.fixture
def artifact_store(settings: Any, tmp_path: Path) -> None:
    settings.VAR_DIR = tmp_path / "var"


def uploaded(portal: Portal, *, by: Any, name: str = "word-count", version: str = "0.1.0",
             visibility: str = Plugin.Visibility.TEAM) -> PluginVersion:
    """A version waiting at the publish gate, as the marketplace's checks leave it (no
    sandbox: the upload test below goes through the real checks)."""
    plugin, _ = Plugin.objects.get_or_create(
        normalized_name=name, defaults={"name": name, "team": portal.team,
                                        "visibility": visibility})
    return PluginVersion.objects.create(
        plugin=plugin, version=version, source=PluginVersion.Source.UPLOAD,
        visibility=visibility, source_sha256="0" * 64, submitted_by=by)


def gate(portal: Portal, name: str = "weekly-scheduler") -> ApprovalRequest:
    project = ProjectFactory(team=portal.team, requester=portal.requester, name=name,
                             status=Project.Status.AWAITING_APPROVAL)
    return approval_for(run_with_history(project=project, status=Run.Status.AWAITING_APPROVAL))


def page_text(client: Any, url: str) -> str:
    return html.unescape(client.get(url).content.decode())


# -- an upload reaches the inbox -----------------------------------------------------------------


def test_an_uploaded_version_reaches_the_reviewers_reviews_bell_and_home(
        portal: Portal, artifact_store: None, django_capture_on_commit_callbacks: Any) -> None:
    upload = SimpleUploadedFile("word-count.zip", zip_bytes(plugin_tree()))
    with django_capture_on_commit_callbacks(execute=True):
        response = portal.client(portal.requester).post(reverse("marketplace:upload"), {
            "team": portal.team.pk, "package": upload, "visibility": "team",
            "category": "text", "tags": "", "changelog": ""})
    assert response.status_code == 302, response.content.decode()[:2000]
    version = PluginVersion.objects.get()
    assert "Waiting for you (1)" not in page_text(portal.client(portal.reviewer), reverse("home"))
    # What the worker does with the queued message (tests/marketplace/test_checks_on_the_queue
    # sends it through Redis to a real worker): the checks pass, the version waits for review.
    plugin_version_check(version_id=version.pk)
    where = reverse("marketplace:version", args=["word-count", "0.1.0"])

    reviewer = portal.client(portal.reviewer)
    reviews = page_text(reviewer, reverse("approval_list"))
    assert "Waiting for you (1)" in reviews
    assert f'<a href="{where}#gate-{version.pk}">Uploaded version 0.1.0</a>' in reviews
    assert "word-count" in reviews and "quinn" in reviews
    assert 'aria-label="1 waiting for you"' in reviews  # the nav's Reviews count

    assert 'aria-label="Notifications, 1 unread"' in reviews
    bell = page_text(reviewer, reverse("notification_list"))
    assert "Review needed: quinn uploaded version 0.1.0 of “word-count”." in bell
    note = Notification.objects.get(user=portal.reviewer)
    opened = reviewer.get(reverse("notification_open", args=[note.pk]))
    assert opened.url == f"{where}#gate-{version.pk}"
    decision_page = page_text(reviewer, opened.url)
    assert "Approve and publish" in decision_page

    home = page_text(reviewer, reverse("home"))
    assert "Waiting for you (1)" in home
    assert f'href="{where}#gate-{version.pk}"><strong>Uploaded version 0.1.0</strong>' in home

    # The admin may decide too; the uploader waits for them and is told nothing waits for them.
    assert Notification.objects.filter(user=portal.admin).exists()
    requester = portal.client(portal.requester)
    assert "Nothing waits for you" in page_text(requester, reverse("approval_list"))
    assert not Notification.objects.filter(user=portal.requester).exists()
    assert "Waiting for you" not in page_text(requester, reverse("home"))


def test_gates_and_uploads_share_one_list_oldest_first(portal: Portal) -> None:
    first = gate(portal)
    upload = uploaded(portal, by=portal.requester)
    second = gate(portal, name="invoice-parser")
    items = inbox_page(portal.reviewer).object_list
    assert [item.url for item in items] == [
        reverse("approval_detail", args=[first.pk]),
        f"{reverse('marketplace:version', args=['word-count', '0.1.0'])}#gate-{upload.pk}",
        reverse("approval_detail", args=[second.pk])]
    assert [item.what for item in items] == [
        "Change request (attempt 2)", "Uploaded version 0.1.0", "Change request (attempt 2)"]
    home = page_text(portal.client(portal.reviewer), reverse("home"))
    assert "Waiting for you (3)" in home


@pytest.mark.parametrize("authors_may_approve", [False, True])
def test_an_upload_is_listed_for_exactly_those_the_rule_lets_decide(
        portal: Portal, authors_may_approve: bool) -> None:
    portal.team.requester_may_approve = authors_may_approve
    portal.team.save()
    version = uploaded(portal, by=portal.requester)
    for membership in Membership.objects.filter(team=portal.team).select_related("user"):
        listed = inbox_count(membership.user) == 1
        refusal = rules.upload_refusal(membership=membership, team=portal.team,
                                       submitted_by_id=version.submitted_by_id)
        assert listed == (not refusal), (membership.user.username, refusal)
    assert inbox_count(portal.outsider) == 0


def test_a_reviewer_who_voted_waits_for_the_others(portal: Portal) -> None:
    portal.team.required_approvals = 2
    portal.team.save()
    version = uploaded(portal, by=portal.requester)
    plugin_version_decide(version=version, user=portal.reviewer, approve=True)
    assert inbox_count(portal.reviewer) == 0 and inbox_count(portal.admin) == 1
    plugin_version_decide(version=version, user=portal.admin, approve=True)
    assert inbox_count(portal.admin) == 0


def test_a_private_plugin_is_listed_only_for_those_who_may_see_it(portal: Portal) -> None:
    portal.team.requester_may_approve = True
    portal.team.save()
    uploaded(portal, by=portal.requester, visibility=Plugin.Visibility.PRIVATE)
    # The rule would let quinn decide her own upload, but a private plugin is for reviewers.
    assert inbox_count(portal.requester) == 0
    assert inbox_count(portal.reviewer) == 1


def test_the_reviews_count_is_one_query(portal: Portal) -> None:
    gate(portal)
    uploaded(portal, by=portal.requester)
    memberships = list(Membership.objects.filter(user=portal.reviewer).select_related("team"))
    with CaptureQueriesContext(connection) as queries:
        assert inbox_count(portal.reviewer, memberships) == 2
    assert len(queries) == 1


# -- the uploader hears the decision, with the reviewer's words ----------------------------------


def test_the_uploader_is_told_the_decision_with_the_comment(portal: Portal) -> None:
    version = uploaded(portal, by=portal.requester)
    client = portal.client(portal.reviewer)
    url = reverse("marketplace:decide", args=["word-count", "0.1.0"])
    client.post(url, {"decision": "reject", "comment": "The README does not say what it counts."})
    note = Notification.objects.get(user=portal.requester, kind=Notification.Kind.DECIDED)
    assert note.message == ("rita decided version 0.1.0 of “word-count”: rejected. Comment: “The"
                            " README does not say what it counts.”")
    assert note.url.endswith(f"#gate-{version.pk}")
    bell = page_text(portal.client(portal.requester), reverse("notification_list"))
    assert "The README does not say what it counts." in bell


# -- decision buttons only for those who may decide ----------------------------------------------


def decide_buttons(text: str) -> list[str]:
    return re.findall(r'name="decision" value="(\w+)"', text)


def test_the_uploader_sees_who_decides_instead_of_buttons_that_would_be_refused(
        portal: Portal) -> None:
    uploaded(portal, by=portal.requester)
    url = reverse("marketplace:version", args=["word-count", "0.1.0"])
    assert decide_buttons(page_text(portal.client(portal.reviewer), url)) == ["approve", "reject"]
    mine = page_text(portal.client(portal.requester), url)
    assert decide_buttons(mine) == []
    assert ("alice or rita can decide this version. You will get a notification when it is"
            " decided.") in mine
    colleague = page_text(portal.client(portal.colleague), url)
    assert decide_buttons(colleague) == []
    assert ("alice or rita can decide this version. quinn gets a notification when it is"
            " decided.") in colleague


# -- a publish request is decided, and published, in one step ------------------------------------

PASSED = {"passed": 1, "failed": 0, "errors": 0, "pass_rate": 1.0, "outcomes": [
    {"nodeid": "tests/test_acceptance.py::test_example_1", "outcome": "passed", "message": ""}]}


def succeeded(portal: Portal, version: str = "0.1.0") -> ApprovalRequest:
    """quinn's word-count run as the engine leaves it after success: the tested iteration and
    a pending publish request proposing the defaults."""
    from marketplace.proposals import publish_payload_default
    from runs.models import Iteration

    files = plugin_tree(version=version)
    project = ProjectFactory(team=portal.team, requester=portal.requester, name="Word count",
                             status=Project.Status.AWAITING_APPROVAL)
    run = Run.objects.create(project=project, status=Run.Status.SUCCEEDED, iteration=1,
                             phase=Run.Phase.DONE)
    run.best_iteration = Iteration.objects.create(
        run=run, number=1, files=files, test_report=PASSED, pass_rate=1.0,
        acceptance_passed=True, tests_ran=True, succeeded=True,
        safety_report={"verdict": "pass", "findings": []}, safety_verdict="pass")
    run.save()
    return ApprovalRequest.objects.create(
        run=run, project=project, kind=ApprovalRequest.Kind.PUBLISH, iteration=1,
        payload={"reasoning": "The run succeeded.", "files": sorted(files),
                 **publish_payload_default(team=portal.team, files=files)})


def approve_and_publish(portal: Portal, user: Any, request: ApprovalRequest,
                        **choice: str) -> Any:
    return portal.client(user).post(reverse("approval_decide", args=[request.pk]), {
        "decision": "approve", "candidate": rules.approval_candidate(request), **choice},
        follow=True)


def test_one_post_approves_and_publishes_with_the_chosen_visibility(
        portal: Portal, artifact_store: None) -> None:
    request = succeeded(portal)
    page = page_text(portal.client(portal.reviewer),
                     reverse("approval_detail", args=[request.pk]))
    assert "Approve and publish" in page and "What approving publishes" in page
    assert re.search(r'<input type="text" name="version" value="0.1.0"', page)
    assert re.search(r'<option value="team" selected>', page)  # the safe default

    response = approve_and_publish(portal, portal.reviewer, request, version="1.0.0",
                                   visibility="public", category="text",
                                   comment="Clear README; ship it.")
    assert response.status_code == 200
    version = PluginVersion.objects.get()
    assert (version.version, version.status) == ("1.0.0", PluginVersion.Status.PUBLISHED)
    plugin = Plugin.objects.get()
    assert (plugin.visibility, plugin.category) == ("public", "text")
    assert plugin.latest_version == version
    request.refresh_from_db()
    assert (request.status, request.decided_by) == ("approved", portal.reviewer)
    assert Project.objects.get(pk=request.project_id).status == Project.Status.PUBLISHED
    shown = html.unescape(response.content.decode())
    where = reverse("marketplace:version", args=["word-count", "1.0.0"])
    assert f'Published: <a href="{where}">word-count 1.0.0</a>' in shown
    # No second form: the plugin is in the marketplace for everyone signed in.
    assert portal.client(portal.outsider).get(where).status_code == 200
    note = Notification.objects.get(user=portal.requester, kind=Notification.Kind.DECIDED)
    assert note.message.endswith("approved. Comment: “Clear README; ship it.”")


def test_rejecting_ignores_the_choice_and_publishes_nothing(portal: Portal) -> None:
    request = succeeded(portal)
    portal.client(portal.reviewer).post(reverse("approval_decide", args=[request.pk]), {
        "decision": "reject", "candidate": rules.approval_candidate(request),
        "version": "0.1.0", "visibility": "public", "category": "text",
        "comment": "Needs a README example."})
    request.refresh_from_db()
    assert request.status == "rejected" and not PluginVersion.objects.exists()


def test_a_choice_that_cannot_be_published_decides_nothing(portal: Portal,
                                                           artifact_store: None) -> None:
    first = succeeded(portal)
    approve_and_publish(portal, portal.reviewer, first, version="0.1.0", visibility="team",
                        category="text")
    second = succeeded(portal)
    page = page_text(portal.client(portal.reviewer), reverse("approval_detail", args=[second.pk]))
    # The plugin is published: the next free version is suggested, its listing stays.
    assert re.search(r'<input type="text" name="version" value="0.1.1"', page)
    assert re.search(r'<select name="visibility"[^>]*disabled', page)
    assert "Set on the plugin's page by the team's admins" in page

    response = approve_and_publish(portal, portal.reviewer, second, version="0.1.0")
    assert response.status_code == 400
    assert "version 0.1.0 of word-count already exists" in html.unescape(
        response.content.decode())
    second.refresh_from_db()
    assert second.status == "pending" and not second.votes.exists()
    assert PluginVersion.objects.count() == 1

    approve_and_publish(portal, portal.reviewer, second, version="0.1.1", visibility="public")
    newest = PluginVersion.objects.get(version="0.1.1")
    assert newest.status == PluginVersion.Status.PUBLISHED
    assert Plugin.objects.get().visibility == "team"  # kept: admins change it on its page


def test_with_two_approvals_the_second_reviewer_publishes_what_the_first_chose(
        portal: Portal, artifact_store: None) -> None:
    portal.team.required_approvals = 2
    portal.team.save()
    request = succeeded(portal)
    approve_and_publish(portal, portal.reviewer, request, version="0.2.0", visibility="public",
                        category="text")
    version = PluginVersion.objects.get()
    assert version.status == PluginVersion.Status.PENDING and version.visibility == "public"
    request.refresh_from_db()
    page = page_text(portal.client(portal.admin), reverse("approval_detail", args=[request.pk]))
    assert 'name="version"' not in page  # what the first approval covered is what is approved
    assert "Public (everyone signed in; pip without a token)" in page
    approve_and_publish(portal, portal.admin, request)
    version.refresh_from_db()
    assert version.status == PluginVersion.Status.PUBLISHED
    assert Plugin.objects.get().visibility == "public"


def test_a_requester_sees_who_decides_instead_of_decision_buttons(portal: Portal) -> None:
    request = succeeded(portal)
    url = reverse("approval_detail", args=[request.pk])
    mine = page_text(portal.client(portal.requester), url)
    assert "Send decision" not in mine and 'name="decision"' not in mine
    assert "Approve and publish" not in mine
    assert ("alice or rita can decide this request. You will get a notification when it is"
            " decided.") in mine
    colleague = page_text(portal.client(portal.colleague), url)
    assert 'name="decision"' not in colleague
    assert ("alice or rita can decide this request. quinn gets a notification when it is"
            " decided.") in colleague
    assert 'name="decision"' in page_text(portal.client(portal.reviewer), url)
