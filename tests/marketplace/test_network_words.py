"""What a plugin may reach is said in the same words on its marketplace page and on a team's
activation review (issue 45): one function (marketplace/selectors/network.py) and one partial
(templates/marketplace/_network.html). Never "Network: none" above "sends data to ...", and
which secret goes to which host. An address setting (`kind = "address"`) is one line of that
list on both pages; on the review the same line says what the team entered and who approved it
(no second list of addresses)."""

from __future__ import annotations

import re
from html import unescape
from typing import Any

import pytest
from django.urls import reverse

from marketplace.models import PluginVersion
from marketplace.selectors.network import network_summary
from tests.factories import MembershipFactory, TeamFactory, UserFactory
from tests.tools.conftest import PLUGIN_TOML, client_for, publish_version
from tests.tools.test_address_settings import BOOKINGS_PY, bookings_toml
from tools.models import Activation

pytestmark = pytest.mark.django_db

TWO_HOSTS = PLUGIN_TOML.replace(
    'network = false\n', 'network = false\nhosts = ["bookings.example.org", "hooks.chat.example"]\n'
).replace('name = "greeting"\ndescription = "The word it greets with"\nrequired = false\n',
          'name = "chat_token"\ndescription = "The chat\'s bot token"\nsecret = true\n\n'
          '[[settings]]\nname = "rota_address"\ndescription = "The rota\'s web address"\n'
          'kind = "address"\n')
SYSTEMS = {"services": {"hosts": ["bookings.example.org", "hooks.chat.example"], "systems": [
    {"name": "our booking system", "does": "reads", "host": "bookings.example.org",
     "address_setting": None, "needs": ["api_key"]},
    {"name": "the team chat", "does": "sends", "host": "hooks.chat.example",
     "address_setting": None, "needs": ["chat_token"]},
    {"name": "the rota", "does": "both", "host": None, "address_setting": "rota_address",
     "needs": []}]}}


@pytest.fixture
def world(db: None) -> dict[str, Any]:
    acme, admin = TeamFactory(slug="acme", name="Acme"), UserFactory(username="acme-admin")
    MembershipFactory(team=acme, user=admin, role="admin")
    return {"acme": acme, "admin": admin}


STATE = re.compile(r'<br><span class="small address-state"[^>]*>.*?</span></li>', re.S)


def reach_of(html: str, *, team_state: bool = False) -> str:
    """The network partial as a page shows it, its text with the spaces evened out; without
    what a team's review adds to an address (what the team entered), unless `team_state`."""
    found = re.search(r'<div class="network-reach" id="network-reach">(.*?)\n</div>', html,
                      re.S)
    assert found, "the page has no network partial"
    part = found.group(1) if team_state else STATE.sub("</li>", found.group(1))
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", part)).split())


def permissions_of(html: str) -> str:
    """The review's "What it may do" section, as text."""
    found = re.search(r'<section aria-labelledby="permissions-heading".*?</section>', html, re.S)
    assert found, "the review has no permissions section"
    text = " ".join(unescape(re.sub(r"<[^>]+>", " ", found.group(0))).split())
    return re.sub(r" ([,.:;])", r"\1", text)


def both_pages(world: dict[str, Any], version: PluginVersion) -> tuple[str, str]:
    client = client_for(world["admin"])
    market = client.get(reverse("marketplace:version", args=[version.plugin.normalized_name,
                                                             version.version]))
    review = client.get(reverse("tools:activate", args=["acme", version.plugin.normalized_name,
                                                        version.version]))
    assert market.status_code == review.status_code == 200
    return market.content.decode(), review.content.decode()


def test_a_plugin_that_reaches_nothing_says_so_in_the_same_words_on_both_pages(
        world: dict[str, Any]) -> None:
    market, review = both_pages(world, publish_version(world["acme"]))
    assert reach_of(market) == reach_of(review)
    assert reach_of(market).startswith("Other services: none. It cannot send your data anywhere")
    for page in (market, review):
        assert "Network: none" not in page and "network: no" not in page


def test_which_secret_goes_to_which_host_from_the_requests_systems(
        world: dict[str, Any]) -> None:
    version = publish_version(world["acme"], toml=TWO_HOSTS)
    PluginVersion.objects.filter(pk=version.pk).update(spec=SYSTEMS)
    version.refresh_from_db()
    summary = network_summary(version)
    assert [(r.host, r.system, r.does, [s.name for s in r.secrets]) for r in summary.reaches] == [
        ("bookings.example.org", "our booking system", "reads from it", ["api_key"]),
        ("hooks.chat.example", "the team chat", "sends data to it", ["chat_token"]),
        ("", "the rota", "sends data to it and reads from it", [])]
    assert summary.reaches[2].address_setting == "rota_address"
    assert summary.secrets_to_any == ()
    market, review = both_pages(world, version)
    words = reach_of(market)
    assert words == reach_of(review)
    assert words.startswith("Other services: it sends data to and reads from 3 services, only"
                            " through the portal")
    assert "None entered yet" not in words  # the marketplace page belongs to no team
    assert ("bookings.example.org (our booking system): reads from it The portal adds the"
            " secret api_key (The key of your accounting system) to the requests to it.") in words
    assert ("hooks.chat.example (the team chat): sends data to it The portal adds the secret"
            " chat_token (The chat's bot token) to the requests to it.") in words
    assert ("the address your team enters as “rota_address” (the rota): sends data to it and"
            " reads from it The rota's web address: a team admin enters it, and so approves it,"
            " when activating or later on the tool's Settings page.") in words
    assert "None entered yet: whoever enters it approves it." in reach_of(review,
                                                                          team_state=True)


def test_without_the_requests_systems_the_secrets_go_to_the_declared_hosts_only(
        world: dict[str, Any]) -> None:
    version = publish_version(world["acme"], toml=TWO_HOSTS.replace("network = false",
                                                                    "network = true"))
    summary = network_summary(version)
    assert [r.secrets for r in summary.reaches] == [(), (), ()]
    assert [s.name for s in summary.secrets_to_any] == ["chat_token", "api_key"]
    market, review = both_pages(world, version)
    words = reach_of(market)
    assert words == reach_of(review)
    assert ("The portal adds the secrets chat_token (The chat's bot token), api_key (The key of"
            " your accounting system) to requests to the hosts above, whichever the plugin"
            " names, and to no other host.") in words
    assert words.endswith("Its code also asks for network access; the sandbox gives none, so it"
                          " reaches only the services above, through the portal.")


def test_an_address_setting_is_one_line_in_the_same_words_on_both_pages(
        world: dict[str, Any]) -> None:
    """An uploaded plugin (no spec): its only system's address is a setting, so plugin.toml
    declares no host. Neither page says it reaches nothing; the review says the address once,
    and after the approval, which host and who approved it, in that same line."""
    version = publish_version(world["acme"], name="bookings", body=BOOKINGS_PY,
                              toml=bookings_toml())
    [reach] = network_summary(version).reaches
    assert (reach.host, reach.address_setting, [s.name for s in reach.secrets]) == (
        "", "booking_address", ["api_key"])  # its one service gets its secret
    market, review = both_pages(world, version)
    words = reach_of(market)
    assert words == reach_of(review)
    assert words.startswith("Other services: it sends data to and reads from 1 service, only"
                            " through the portal")
    assert ("the address your team enters as “booking_address” The web address of our booking"
            " system: a team admin enters it, and so approves it, when activating or later on"
            " the tool's Settings page. The portal adds the secret api_key (The key of your"
            " accounting system) to the requests to it.") in words
    for page in (market, review):
        assert "Other services: none" not in page and "Network: none" not in page
    said = permissions_of(review)
    assert said.count("booking_address") == 1 and said.count("address your team enters") == 1
    assert "None entered yet: whoever enters it approves it." in said

    admin = client_for(world["admin"])
    approved = admin.post(reverse("tools:activate", args=["acme", "bookings", "1.0.0"]),
                          {"decision": "approve", "address-booking_address":
                           "bookings.example.org"})
    assert approved.status_code == 302
    activation = Activation.objects.get(status="active")
    after = admin.get(reverse("tools:activation", args=["acme", activation.pk])).content.decode()
    assert reach_of(after) == words  # the version's words do not change
    said = permissions_of(after)
    assert said.count("bookings.example.org") == 1 and said.count("booking_address") == 1
    assert ("Entered by your team: sends data to bookings.example.org, approved by acme-admin"
            in said)
    assert "None entered yet" not in said and "Other services: none" not in said
