"""What the plugin does follows the version published (issue 48): the reviewer who approves a
run's publish request sees its description in the same form and may change it (a change may
change what the plugin does); the version's plugin.toml, its README, the marketplace and the
tool's page then say the new words."""

from __future__ import annotations

import pytest
from django.urls import reverse

from marketplace.models import Plugin, PluginVersion
from runs.models import Run
from tests.marketplace.conftest import client_for
from tests.marketplace.test_publish_run import publish_request

pytestmark = pytest.mark.django_db

OLD = "Counts the words in a text."
NEW = "Counts the words of a text, and says how many of them are long."


def test_the_reviewer_publishes_with_the_description_they_saw_or_changed(
        market: dict, succeeded_run: Run) -> None:
    approval = publish_request(succeeded_run)
    reviewer = client_for(market["reviewer"])
    url = reverse("approval_detail", args=[approval.pk])
    page = reviewer.get(url)
    form = page.context["form"]
    assert form["summary"].value() == OLD  # the candidate's own
    assert "The description in the marketplace, on the tool&#x27;s page and in the README." \
        in page.content.decode()
    data = {name: form[name].value() for name in form.fields if form[name].value() is not None}
    data.update(decision="approve", comment="", summary=NEW)
    answer = reviewer.post(reverse("approval_decide", args=[approval.pk]), data)
    assert answer.status_code == 302, answer.content.decode()[-2000:]

    version = PluginVersion.objects.get(run=succeeded_run)
    assert version.status == PluginVersion.Status.PUBLISHED
    assert version.summary == NEW
    assert f"summary = \"{NEW}\"" in version.files["plugin.toml"]
    assert NEW in version.files["README.md"] and OLD not in version.files["README.md"]
    assert Plugin.objects.get(pk=version.plugin_id).summary == NEW
    listing = client_for(market["requester"]).get(
        reverse("marketplace:plugin", args=["word-count"])).content.decode()
    assert NEW in listing


def test_a_change_run_says_whose_words_the_description_is(market: dict,
                                                          succeeded_run: Run) -> None:
    Run.objects.filter(pk=succeeded_run.pk).update(base_version="1.0.0",
                                                   base_files={"plugin.toml": "x"})
    page = client_for(market["reviewer"]).get(
        reverse("approval_detail", args=[publish_request(succeeded_run).pk])).content.decode()
    assert ("Version 1.0.0&#x27;s words: if the change changes what it does, say so here."
            in page)
