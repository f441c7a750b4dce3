"""Reviewers see the other services a plugin reaches at its gates (issue 27): the plan gate names
the spec's hosts and the settings the team will enter, a reply that adds a host to plugin.toml
stops at a gate under semi autonomy with the new host in words (and not under full autonomy),
and the publish gate names the hosts the plugin being published reaches."""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from autocoder.engine.verifying import permissions_request_words
from runs.models import ApprovalRequest, Run
from runs.selectors import results as selectors
from runs.services import deciding, driving
from tests.engine.conftest import greeter_spec, load_script

pytestmark = pytest.mark.django_db

NEW_HOST_REASON = "The plugin asks for new permissions: to reach new hosts: hooks.slack.com"


def drive(run: Run) -> Run:
    return driving.run_drive(run_id=run.id)


def pending(run: Run) -> ApprovalRequest:
    approval = selectors.pending_approval(run)
    assert approval is not None, f"run {run.id} has no pending approval ({run.status})"
    return approval


def approve(approval: ApprovalRequest, user: Any) -> None:
    deciding.approval_decide(approval=approval, user=user, decision="approve", comment="",
                             dispatch=None)


def review_page(approval: ApprovalRequest, user: Any) -> str:
    client = Client()
    client.force_login(user)
    response = client.get(reverse("approval_detail", args=[approval.pk]))
    assert response.status_code == 200
    text = re.sub(r"</?(strong|span|em|code|a)\b[^>]*>", "", response.content.decode())
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", text)).split())


def asking_for_a_host() -> dict[str, list[str]]:
    """The permissions_request scenario, whose implementer asks in plugin.toml to reach
    hooks.slack.com instead of the network."""
    script = load_script("permissions_request")
    reply = script["implementer"][0]
    asked = reply.replace('network = true\nfilesystem = "none"',
                          'network = false\nfilesystem = "none"\nhosts = ["hooks.slack.com"]')
    assert asked != reply
    return {**script, "implementer": [asked]}


@pytest.mark.slow
def test_a_new_host_stops_a_semi_run_at_a_gate_that_names_it(
        start_run: Callable[..., Run], people: dict[str, Any]) -> None:
    run = drive(start_run(asking_for_a_host(), autonomy="semi"))
    plan = pending(run)
    assert "This plugin reaches no other service." in review_page(plan, people["reviewer"])
    approve(plan, people["reviewer"])

    run = drive(run)
    change = pending(run)
    assert change.kind == "change"
    assert NEW_HOST_REASON in change.payload["reasons"]
    page = review_page(change, people["reviewer"])
    assert NEW_HOST_REASON in page
    assert "Other services this plugin reaches" in page
    assert "It sends data to and reads from hooks.slack.com new" in page
    assert "new: hooks.slack.com" in page

    approve(change, people["reviewer"])
    final = drive(run)
    assert final.status == Run.Status.SUCCEEDED
    best = final.best_iteration
    assert best is not None and 'hosts = ["hooks.slack.com"]' in best.files["plugin.toml"]
    publish = pending(final)
    assert publish.kind == "publish"
    assert publish.payload["permissions"]["hosts"] == ["hooks.slack.com"]
    page = review_page(publish, people["reviewer"])
    assert "It sends data to and reads from hooks.slack.com" in page
    assert "new: hooks.slack.com" not in page, "publishing asks for nothing new"


@pytest.mark.slow
def test_under_full_autonomy_a_new_host_does_not_stop_the_run_and_the_publish_gate_shows_it(
        start_run: Callable[..., Run], people: dict[str, Any]) -> None:
    final = drive(start_run(asking_for_a_host(), autonomy="full"))

    assert final.status == Run.Status.SUCCEEDED
    assert not final.approvals.filter(kind__in=["plan", "change"]).exists()
    best = final.best_iteration
    assert best is not None and 'hosts = ["hooks.slack.com"]' in best.files["plugin.toml"]
    publish = pending(final)
    assert publish.kind == "publish"
    assert publish.payload["services"]["hosts"] == ["hooks.slack.com"]
    page = review_page(publish, people["reviewer"])
    assert "It sends data to and reads from hooks.slack.com" in page
    assert "This plugin reaches no other service." not in page

    # A request made before gates carried the services: read from its attempt's plugin.toml.
    publish.payload = {k: v for k, v in publish.payload.items() if k != "services"}
    publish.save(update_fields=["payload"])
    assert "It sends data to and reads from hooks.slack.com" in review_page(
        publish, people["reviewer"])


def test_the_plan_gate_lists_the_specs_hosts_and_settings(
        start_run: Callable[..., Run], people: dict[str, Any]) -> None:
    spec = greeter_spec(services={
        "hosts": ["hooks.slack.com", "*.example.com"],
        "settings": [{"name": "channel", "description": "Where the greeting is posted"},
                     {"name": "token", "description": "The chat's API token", "secret": True}],
    })
    run = drive(start_run(load_script("success"), autonomy="semi", spec=spec))
    plan = pending(run)

    assert plan.kind == "plan"
    assert plan.payload["services"]["hosts"] == ["hooks.slack.com", "*.example.com"]
    page = review_page(plan, people["reviewer"])
    assert "It sends data to and reads from hooks.slack.com" in page
    assert ("It sends data to and reads from *.example.com (any address ending in "
            ".example.com)") in page
    assert "Settings the team must enter" in page
    assert "channel: Where the greeting is posted" in page
    assert "token: The chat's API token secret: never shown to the plugin" in page
    assert "channel: Where the greeting is posted secret" not in page
    assert "new: hooks.slack.com" not in page, "a plan asks for no change of permissions"


def test_the_plan_gate_lists_every_system_and_the_address_the_admin_enters(
        start_run: Callable[..., Run], people: dict[str, Any]) -> None:
    """Issue 45: two systems, one whose address the requester did not know."""
    spec = greeter_spec(services={
        "hosts": ["hooks.slack.com"],
        "settings": [{"name": "token", "description": "The chat's API token", "secret": True},
                     {"name": "booking_address", "kind": "address",
                      "description": "The web address of our booking system"}],
        "systems": [{"name": "our booking system", "does": "reads", "host": None,
                     "address_setting": "booking_address", "needs": []},
                    {"name": "the team chat", "does": "sends", "host": "hooks.slack.com",
                     "address_setting": None, "needs": ["token"]}]})
    run = drive(start_run(load_script("success"), autonomy="semi", spec=spec))
    plan = pending(run)
    assert [s["name"] for s in plan.payload["services"]["systems"]] == [
        "our booking system", "the team chat"]
    page = review_page(plan, people["reviewer"])
    assert ("our booking system: it reads from it, at the address the team's admin enters "
            "when activating it (booking_address) and approves then") in page
    assert "the team chat: it sends data to it, at hooks.slack.com" in page
    assert ("It sends data to and reads from the address the team's admin enters for "
            "booking_address (The web address of our booking system): the admin sees that "
            "address and approves it when activating the plugin") in page
    assert "booking_address: The web address of our booking system an address: approved at " \
        "activation" in page



@pytest.mark.parametrize(("before", "after", "words"), [
    ({"network": False, "filesystem": "none"}, {"network": True, "filesystem": "none"},
     "The plugin asks for new permissions: network access"),
    ({"network": False, "filesystem": "none"}, {"network": False, "filesystem": "workdir"},
     "The plugin asks for new permissions: to write files in its working folder"),
    ({"network": False, "filesystem": "none", "hosts": ["old.example.com"]},
     {"network": False, "filesystem": "none", "hosts": ["api.example.com", "hooks.slack.com"]},
     "The plugin asks for new permissions: to reach new hosts: api.example.com, "
     "hooks.slack.com (and no longer reaches old.example.com)"),
    ({"network": True, "filesystem": "none", "hosts": ["old.example.com"]},
     {"network": False, "filesystem": "none"},
     "The plugin asks to change its permissions: no longer reaches old.example.com; "
     "gives up network access"),
])
def test_a_permissions_request_in_words(before: dict[str, Any], after: dict[str, Any],
                                        words: str) -> None:
    assert permissions_request_words(before, after) == words
