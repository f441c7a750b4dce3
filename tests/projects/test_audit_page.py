"""The audit log page: admins and reviewers read and filter it; requesters 403, outsiders 404."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from teams.models import AuditEntry
from teams.services.audit import audit_record
from tests.teams.conftest import Portal
from tests.tools.conftest import publish_version
from tools.services.activations import activation_decide, activation_request

pytestmark = pytest.mark.django_db


def url(query: str = "") -> str:
    return reverse("audit_log", args=["acme"]) + query


@pytest.fixture
def entries(portal: Portal) -> None:
    team = portal.team
    audit_record(actor=portal.reviewer, action="approval.approve", team=team,
                 target_type="approvalrequest", target_id="7", target_repr="change of csv-tool",
                 before={"status": "pending"}, after={"status": "approved"})
    audit_record(actor=portal.admin, action="team.settings_update", team=team, target=team,
                 before={"required_approvals": 1}, after={"required_approvals": 2})
    audit_record(actor=portal.admin, action="run.cancel", team=team,
                 target_type="run", target_id="3", target_repr="run 3 of pdf-merger")
    # An old entry is written old (entries cannot be updated to backdate them).
    AuditEntry.objects.bulk_create([AuditEntry(
        team=team, actor_name="alice", action="run.retry", target_type="run", target_id="4",
        target_repr="run 4 of pdf-merger", created_at=timezone.now() - timedelta(days=10))])
    audit_record(actor=portal.outsider, action="approval.reject",
                 team=portal.outsider.memberships.get().team, target_type="approvalrequest",
                 target_id="99", target_repr="another team's secret")


def test_admin_and_reviewer_read_requester_403_outsider_404(portal: Portal, entries: None) -> None:
    for user in (portal.admin, portal.reviewer):
        html = portal.client(user).get(url()).content.decode()
        assert "approval.approve" in html and "change of csv-tool" in html
        assert "another team&#x27;s secret" not in html and "another team's secret" not in html
    assert portal.client(portal.requester).get(url()).status_code == 403
    assert portal.client(portal.outsider).get(url()).status_code == 404


def test_before_and_after_are_shown(portal: Portal, entries: None) -> None:
    html = portal.client(portal.admin).get(url()).content.decode()
    assert "<dt>required_approvals</dt><dd>1</dd>" in html
    assert "<dt>required_approvals</dt><dd>2</dd>" in html


def test_filters_by_action_prefix_actor_text_and_dates(portal: Portal, entries: None) -> None:
    client = portal.client(portal.admin)

    def actions(query: str) -> list[str]:
        html = client.get(url(query)).content.decode()
        return sorted(set(a for a in ("approval.approve", "team.settings_update", "run.cancel",
                                      "run.retry") if f"<code>{a}</code>" in html))

    assert actions("?action=approval") == ["approval.approve"]
    assert actions("?action=run") == ["run.cancel", "run.retry"]
    assert actions("?actor=rita") == ["approval.approve"]
    assert actions("?q=pdf-merger") == ["run.cancel", "run.retry"]
    week_ago = (timezone.localdate() - timedelta(days=7)).isoformat()
    assert "run.retry" not in actions(f"?since={week_ago}")
    assert actions(f"?until={week_ago}") == ["run.retry"]
    bad = client.get(url(f"?since={timezone.localdate()}&until={week_ago}")).content.decode()
    assert "“Until” must be on or after “From”." in bad
    assert "No entry matches" in client.get(url("?action=nothing")).content.decode()


def test_pagination_of_a_long_log(portal: Portal) -> None:
    AuditEntry.objects.bulk_create([AuditEntry(team=portal.team, actor_name="alice",
                                               action=f"test.entry{i}", target_type="x")
                                    for i in range(120)])
    client = portal.client(portal.admin)
    first = client.get(url()).content.decode()
    assert "Page 1 of 3" in first and "Older" in first
    third = client.get(url("?action=test&page=3")).content.decode()
    assert "Page 3 of 3" in third and third.count("<code>test.entry") == 20


def test_empty_log_explains_what_will_appear(portal: Portal) -> None:
    html = portal.client(portal.reviewer).get(url()).content.decode()
    assert "Nothing recorded yet" in html


def test_each_entry_reads_as_a_sentence_with_the_details_folded(portal: Portal,
                                                                entries: None) -> None:
    """The probe found the audit log a raw key/value dump."""
    html = portal.client(portal.admin).get(url()).content.decode()
    assert '<p class="audit-sentence">rita approved change of csv-tool.</p>' in html
    assert '<p class="audit-sentence">alice cancelled run 3 of pdf-merger.</p>' in html
    assert '<p class="audit-sentence">alice changed the settings of Acme.</p>' in html
    # The codes and values are still there, after the sentence, folded.
    row = html.split("rita approved change of csv-tool.", 1)[1].split("</tr>", 1)[0]
    assert "<details" in row and "<code>approval.approve</code>" in row
    assert "<dt>status</dt><dd>approved</dd>" in row


def test_an_action_without_words_of_its_own_still_reads_as_a_sentence(portal: Portal) -> None:
    from teams.audit_words import VERBS, audit_sentence

    entry = AuditEntry(actor_name="alice", action="thing.frobnicate_all", target_type="run",
                       target_id="5", target_repr="")
    assert audit_sentence(entry) == "alice thing: frobnicate all run 5."
    assert "approval.approve" in VERBS


def test_every_action_the_portal_records_has_words() -> None:
    """An action written anywhere in the code (action="team.invite", or a *_ACTION constant)
    reads as a sentence, not as its code."""
    import re
    from pathlib import Path

    from teams.audit_words import VERBS

    root = Path(__file__).resolve().parents[2]
    pattern = re.compile(r'(?:action=|_ACTION = )"([a-z_]+\.[a-z_]+)"')
    written = {match for app in ("config", "autocoder", "teams", "projects", "runs",
                                "marketplace", "tools")
               for path in (root / app).rglob("*.py") if "migrations" not in path.parts
               for match in pattern.findall(path.read_text())}
    assert written and not written - set(VERBS), sorted(written - set(VERBS))


def test_tool_entries_name_the_plugin_and_version(portal: Portal) -> None:
    """Issue 48: "activated 2 3 in team 1" said nothing to a person."""
    version = publish_version(portal.team)
    activation_decide(activation=activation_request(team=portal.team, version=version,
                                                    user=portal.admin),
                      user=portal.admin, approve=True)
    AuditEntry.objects.bulk_create([AuditEntry(
        team=portal.team, actor_name="alice", action="tool.deactivated",
        target_type="activation", target_id="2", target_repr="2 3 in team 1 (active)",
        before={"version": "0.9.0"}, after={"plugin": "old-tool"})])
    page = " ".join(portal.client(portal.admin).get(url()).content.decode().split())
    assert f"{portal.admin.get_username()} activated month-totals 1.0.0." in page
    assert "alice deactivated old-tool 0.9.0." in page  # written before names were kept
    assert "in team" not in page.split("What happened", 1)[1]
