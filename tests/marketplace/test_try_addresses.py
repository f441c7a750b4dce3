""""Try it" on a plugin whose system's address is an address setting (`kind = "address"`, issue
45): it declares no host in plugin.toml, yet a try reaches that system. A **rehearsal** lets it
reach the host its examples give the setting (nothing is sent: the examples' sample answers
reply); **sending for real** reaches the address the trier's team's admin approved at
activation, as a tool call does (tools/services/addresses.py), and no other.

The booking systems are loopback HTTP servers of this test that keep every path asked for,
allowed by TOOLS_INTERNAL_HOSTS (tests reach only loopback addresses). The plugin runs for real
in the sandbox.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from html import unescape
from typing import Any

import pytest
from django.urls import reverse

from marketplace.models import PluginVersion, TryRequest
from marketplace.services.trying import plugin_try_perform, plugin_try_request
from marketplace.validation import PackageError
from teams.models import AuditEntry
from tests.factories import MembershipFactory, TeamFactory, UserFactory
from tests.tools.conftest import client_for, publish_version
from tests.tools.test_address_settings import BOOKINGS_PY, BookingService, _serve, bookings_toml
from tools.models import Activation
from tools.services.activations import activation_request
from tools.services.address_approval import activation_approve
from tools.services.tool_settings import tool_settings_save

pytestmark = pytest.mark.django_db

SAMPLE_HOST = "our-booking-system.example"  # the placeholder the interview's examples give


@pytest.fixture
def world(db: None, settings: Any) -> dict[str, Any]:
    """Team acme: its admin, and a requester who tries plugins (acme is their current team)."""
    settings.TOOLS_INTERNAL_HOSTS = frozenset({"127.0.0.1"})
    acme = TeamFactory(slug="acme", name="Acme")
    people = {role: UserFactory(username=f"acme-{role}") for role in ("admin", "requester")}
    for role, user in people.items():
        MembershipFactory(team=acme, user=user, role=role)
    return {"acme": acme, **people}


@pytest.fixture
def bookings() -> Iterator[BookingService]:
    yield from _serve()


@pytest.fixture
def elsewhere() -> Iterator[BookingService]:
    yield from _serve()


@pytest.fixture
def version(world: dict[str, Any]) -> PluginVersion:
    """The bookings plugin: no host in plugin.toml, only the address setting booking_address;
    the "hours" example gives it the placeholder address and a sample answer from there."""
    published = publish_version(world["acme"], name="bookings", body=BOOKINGS_PY,
                                toml=bookings_toml())
    assert "hosts" not in published.files["plugin.toml"].split("[[settings]]")[0]
    example = {"input": {"week": "12"}, "output": {"status": 200, "hours": 7},
               "settings": {"booking_address": f"https://{SAMPLE_HOST}"},
               "http": [{"method": "GET", "url": f"https://{SAMPLE_HOST}/hours", "status": 200,
                         "json": {"hours": 7}}]}
    PluginVersion.objects.filter(pk=published.pk).update(commands=[
        {"name": "hours", "description": "hours", "examples": [example]},
        {"name": "elsewhere", "description": "elsewhere", "examples": []}])
    published.refresh_from_db()
    return published


def tried(world: dict[str, Any], version: PluginVersion, command: str, payload: dict[str, Any],
          **how: Any) -> TryRequest:
    """A try as the page asks for it (from team acme), then performed as the worker does."""
    asked = plugin_try_request(version=version, user=world["requester"], command=command,
                               payload=payload, team_id=world["acme"].pk, **how)
    done = plugin_try_perform(try_id=asked.pk)
    assert done is not None
    return done


def page_of(world: dict[str, Any]) -> str:
    page = client_for(world["requester"]).get(
        reverse("marketplace:version", args=["bookings", "1.0.0"]))
    assert page.status_code == 200
    return " ".join(unescape(page.content.decode()).split())


def activated(world: dict[str, Any], version: PluginVersion, **addresses: str) -> Activation:
    asked = activation_request(team=world["acme"], version=version, user=world["admin"])
    return activation_approve(activation=asked, user=world["admin"], addresses=addresses)


def test_a_rehearsal_reaches_the_examples_address_and_is_answered_from_its_samples(
        world: dict[str, Any], version: PluginVersion, bookings: BookingService,
        clean_redis: Any) -> None:
    # Even with the team's real address approved, a rehearsal sends nothing there.
    activated(world, version, booking_address=bookings.url)
    page = page_of(world)
    assert "Requests to the address your team enters as “booking_address”" in page
    assert 'name="mode" value="rehearse" checked' in page
    done = tried(world, version, "hours", {"week": "12"})
    assert done.result["ok"], done.result
    assert done.result["output"] == {"status": 200, "hours": 7}  # the sample answer
    [record] = done.result["http_requests"]
    assert record["rehearsal"] is True and record["status"] == 200
    assert (record["method"], record["host"], record["path"]) == ("GET", SAMPLE_HOST, "/hours?week")
    assert bookings.paths == []
    assert "declared no hosts" not in json.dumps(done.result)
    # Another host than the example's address stays refused, and is not reached either.
    other = tried(world, version, "elsewhere", {"url": bookings.url + "/"})
    assert not other.result["ok"]
    assert "is neither one of the hosts this plugin declared" in other.result["error"]
    assert f"(approved: {SAMPLE_HOST})" in other.result["error"]
    assert bookings.paths == []


def test_a_rehearsal_without_an_example_address_says_so(
        world: dict[str, Any], version: PluginVersion, clean_redis: Any) -> None:
    PluginVersion.objects.filter(pk=version.pk).update(commands=[
        {"name": "hours", "description": "hours", "examples": []},
        {"name": "elsewhere", "description": "elsewhere", "examples": []}])
    version.refresh_from_db()
    done = tried(world, version, "elsewhere", {"url": f"https://{SAMPLE_HOST}/"})
    assert not done.result["ok"]
    assert ("booking_address has no value in the plugin's examples, so a rehearsal has no"
            " address for it.") in done.result["error"]


def test_a_real_send_reaches_the_address_the_team_approved_and_no_other(
        world: dict[str, Any], version: PluginVersion, bookings: BookingService,
        elsewhere: BookingService, clean_redis: Any) -> None:
    activation = activated(world, version)  # activated before the address is known
    with pytest.raises(PackageError) as nowhere:
        plugin_try_request(version=version, user=world["requester"], command="hours",
                           payload={"week": "12"}, team_id=world["acme"].pk, send=True,
                           confirmed=True)
    assert ("Sending for real reaches only the addresses Acme's admins approved for bookings,"
            " and none is approved yet: booking_address has no address yet") in \
        nowhere.value.errors[0]
    page = page_of(world)
    assert 'value="send"' not in page and "none is approved yet" in page

    # The admin enters it on the Settings page, which approves it.
    tool_settings_save(team=world["acme"], plugin=activation.plugin, version=version,
                       user=world["admin"], values={"booking_address": bookings.url})
    host = f"http://127.0.0.1:{bookings.port}"
    page = page_of(world)
    assert "Send for real, with Acme's settings" in page
    assert f"I confirm: this sends real requests to {host}" in page
    with pytest.raises(PackageError, match=f"makes real requests to {host} with your team's"):
        plugin_try_request(version=version, user=world["requester"], command="hours",
                           payload={"week": "12"}, team_id=world["acme"].pk, send=True)
    done = tried(world, version, "hours", {"week": "12"}, send=True, confirmed=True)
    assert done.result["ok"], done.result
    assert done.result["output"] == {"status": 200, "hours": 12}  # the real service's answer
    assert bookings.paths == ["/hours?week=12"]
    entry = AuditEntry.objects.get(action="marketplace.try_sent")
    assert entry.after is not None
    assert entry.after["hosts"] == [host] and entry.after["try"] == done.pk
    [record] = done.result["http_requests"]
    assert "rehearsal" not in record and record["host"] == "127.0.0.1"

    # A host the team never approved (loopback too, allowed by TOOLS_INTERNAL_HOSTS): refused.
    refused = tried(world, version, "elsewhere", {"url": elsewhere.url + "/"}, send=True,
                    confirmed=True)
    assert not refused.result["ok"]
    assert (f"nor an address a team admin approved for it (approved: {host})"
            in refused.result["error"])
    assert elsewhere.paths == [] and bookings.paths == ["/hours?week=12"]
