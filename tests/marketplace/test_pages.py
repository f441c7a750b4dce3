"""The pages a person uses around a plugin: awaiting approval, deciding, yanking, the listing
settings and the API tokens page (a token is shown once, then only its prefix)."""

from __future__ import annotations

from html import unescape
from typing import Any

import pytest
from django.urls import reverse

from marketplace.models import ApiToken, PluginVersion
from tests.marketplace.conftest import client_for, plugin_tree

pytestmark = pytest.mark.django_db


def test_a_reviewer_finds_a_pending_upload_and_publishes_it_from_its_page(
        market: dict, submit: Any) -> None:
    version = submit(plugin_tree(), visibility="public")
    reviewer = client_for(market["reviewer"])
    pending = reviewer.get(reverse("marketplace:pending")).content.decode()
    assert "word-count" in pending and "acme-requester" in pending
    assert "Nothing waits" in client_for(market["outsider"]).get(
        reverse("marketplace:pending")).content.decode()
    page = reviewer.get(reverse("marketplace:version", args=["word-count", "0.1.0"]))
    assert "Approve and publish" in page.content.decode()
    assert client_for(market["outsider"]).get(
        reverse("marketplace:plugin", args=["word-count"])).status_code == 404  # not yet public

    response = reverse("marketplace:decide", args=["word-count", "0.1.0"])
    done = reviewer.post(response, {"decision": "approve", "comment": "looks good"}, follow=True)
    assert "word-count 0.1.0: published." in done.content.decode()
    version.refresh_from_db()
    assert version.status == PluginVersion.Status.PUBLISHED
    public_page = client_for(market["outsider"]).get(
        reverse("marketplace:plugin", args=["Word_Count"]), follow=True)
    html = public_page.content.decode()
    assert public_page.redirect_chain[-1][0] == reverse("marketplace:plugin", args=["word-count"])
    for expected in ("pip install word-count", "count-words", "1 passed, 0 failed, 0 errors",
                     "Approved", "acme-reviewer", "looks good", "word_count-0.1.0-py3-none-any.whl",
                     "Run in the sandbox", "Write a review"):
        assert expected in html, expected
    # The command can be copied in one press (the button appears where a clipboard exists).
    assert 'id="pip-command"' in html and 'data-copy="#pip-command"' in html
    # Beside the command, what installing means: the user's own rights, no sandbox.
    assert "runs as ordinary Python code with your user&#x27;s rights" in html or \
        "runs as ordinary Python code with your user's rights" in html
    assert "outside the portal&#x27;s sandbox" in html or "outside the portal's sandbox" in html


def test_yanking_from_the_page_marks_the_version_everywhere(market: dict, publish: Any) -> None:
    publish(plugin_tree(), visibility="public")
    url = reverse("marketplace:yank", args=["word-count", "0.1.0"])
    refused = client_for(market["requester"]).post(url, {"reason": "x"}, follow=True)
    assert "Only the team&#x27;s reviewers and admins can do this." in refused.content.decode()
    assert not PluginVersion.objects.get().yanked
    page = client_for(market["reviewer"]).post(url, {"reason": "data loss bug"}, follow=True)
    html = page.content.decode()
    assert "0.1.0 is yanked." in html and "This version was yanked: data loss bug" in html
    # a yanked version needs the exact pin
    assert 'pip install "word-count==0.1.0"' in unescape(html)


def test_only_admins_change_the_listing(market: dict, publish: Any) -> None:
    publish(plugin_tree(), visibility="team")
    url = reverse("marketplace:settings", args=["word-count"])
    assert client_for(market["reviewer"]).get(url).status_code == 403
    assert client_for(market["outsider"]).get(url).status_code == 404
    admin = client_for(market["admin"])
    assert admin.post(url, {"visibility": "public", "category": "text",
                            "tags": "words, Counting"}).status_code == 302
    listed = client_for(market["loner"]).get(reverse("marketplace:catalogue"), {"tag": "counting"})
    assert "word-count" in listed.content.decode()


def test_a_token_is_shown_once_and_can_be_revoked(market: dict) -> None:
    client = client_for(market["loner"])
    created = client.post(reverse("marketplace:tokens"), {"name": "laptop"})
    html = created.content.decode()
    token = ApiToken.objects.get()
    raw = html.split('id="new-token">', 1)[1].split("<", 1)[0]
    assert raw.startswith(token.prefix) and created["Cache-Control"] == "no-store"
    again = client.get(reverse("marketplace:tokens")).content.decode()
    assert raw not in again and f"{token.prefix}…" in again
    client.post(reverse("marketplace:token_revoke", args=[token.pk]))
    token.refresh_from_db()
    assert token.revoked_at is not None
    other = client_for(market["outsider"])
    assert other.post(reverse("marketplace:token_revoke", args=[token.pk])).status_code == 302
    assert ApiToken.objects.filter(revoked_at__isnull=True).count() == 0
