"""A version its publisher withdrew (yanked) cannot be activated: not from the list (it never
showed there), not by a direct POST to the activation page, not by approving a request made
before the yank, not by a roll-back to it. The service refuses, so every door does."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse

from marketplace.models import PluginVersion
from marketplace.services.yanking import plugin_version_yank
from tests.tools.conftest import client_for, publish_version
from tools.models import Activation
from tools.services.activations import (
    ActivationError,
    activation_decide,
    activation_request,
    activation_rollback,
)

pytestmark = pytest.mark.django_db
WORDS = "was withdrawn (yanked) by its publisher (It loses data): it cannot be activated"


def yanked(world: dict[str, Any], version: str = "1.0.0") -> PluginVersion:
    published = publish_version(world["acme"], version)
    return plugin_version_yank(version=published, user=world["admin"], reason="It loses data.")


def test_the_service_refuses_a_yanked_version(world: dict[str, Any]) -> None:
    version = yanked(world)
    with pytest.raises(ActivationError, match=WORDS.replace("(", r"\(").replace(")", r"\)")):
        activation_request(team=world["acme"], version=version, user=world["admin"])
    assert not Activation.objects.exists()


@pytest.mark.parametrize("person", ["admin", "requester"])
def test_a_direct_post_to_the_activation_page_is_refused(world: dict[str, Any],
                                                         person: str) -> None:
    version = yanked(world)
    response = client_for(world[person]).post(
        reverse("tools:activate", args=["acme", "month-totals", version.version]),
        {"decision": "approve"})
    assert response.status_code == 302 and response.url == reverse("tools:list", args=["acme"])
    assert any(WORDS in str(m) for m in get_messages(response.wsgi_request))
    assert not Activation.objects.exists()


def test_the_review_page_says_so_and_offers_no_decision(world: dict[str, Any]) -> None:
    version = yanked(world)
    page = client_for(world["admin"]).get(
        reverse("tools:activate", args=["acme", "month-totals", version.version]))
    html = page.content.decode()
    assert page.status_code == 200 and WORDS in html
    assert "Approve and activate" not in html


def test_a_request_made_before_the_yank_cannot_be_approved(world: dict[str, Any]) -> None:
    version = publish_version(world["acme"])
    asked = activation_request(team=world["acme"], version=version, user=world["requester"])
    plugin_version_yank(version=version, user=world["admin"], reason="It loses data.")
    with pytest.raises(ActivationError, match="withdrawn"):
        activation_decide(activation=asked, user=world["admin"], approve=True)
    response = client_for(world["admin"]).post(
        reverse("tools:activation", args=["acme", asked.pk]), {"decision": "approve"})
    assert response.status_code == 302
    assert any(WORDS in str(m) for m in get_messages(response.wsgi_request))
    asked.refresh_from_db()
    assert asked.status == Activation.Status.PENDING
    refused = activation_decide(activation=asked, user=world["admin"], approve=False)
    assert refused.status == Activation.Status.REFUSED  # refusing it still works


def test_no_roll_back_to_a_yanked_version(world: dict[str, Any]) -> None:
    first = publish_version(world["acme"], "1.0.0")
    activation_decide(activation=activation_request(team=world["acme"], version=first,
                                                    user=world["admin"]),
                      user=world["admin"], approve=True)
    second = publish_version(world["acme"], "1.1.0")
    activation_decide(activation=activation_request(team=world["acme"], version=second,
                                                    user=world["admin"]),
                      user=world["admin"], approve=True)
    plugin_version_yank(version=first, user=world["admin"], reason="It loses data.")
    with pytest.raises(ActivationError, match="withdrawn"):
        activation_rollback(team=world["acme"], plugin=first.plugin, user=world["admin"])
    in_use = Activation.objects.get(status=Activation.Status.ACTIVE)
    assert in_use.version == second
