"""Using an activated plugin: the form (queued, run by the worker's perform), storage per
team, secrets kept out of logs and pages, the kill switch, the log and its retention. The
plugin runs for real in the sandbox."""

from __future__ import annotations

import io
from datetime import timedelta
from typing import Any

import pytest
from django.urls import reverse
from django.utils import timezone

from teams.models import AuditEntry, Notification
from tests.tools.conftest import client_for
from tools.models import Activation, Invocation, ToolStorage
from tools.selectors import plugin_usage
from tools.services.activations import activation_decide, activation_request
from tools.services.blocks import version_block
from tools.services.invocations import invocation_perform, invocations_prune
from tools.services.tool_settings import tool_settings_save

pytestmark = pytest.mark.django_db(transaction=True)
SECRET = "sk-very-secret-1234"


def run_form(client: Any, command: str, data: dict[str, Any]) -> Invocation:
    """Post the form as a browser does and run the queued call as the worker would."""
    response = client.post(reverse("tools:run", args=["acme", "month-totals", command]), data)
    assert response.status_code == 302, response.content.decode()[:2000]
    invocation = Invocation.objects.latest("pk")
    invocation_perform(invocation_id=invocation.pk)
    invocation.refresh_from_db()
    return invocation


def test_a_csv_upload_through_the_form_comes_back_as_a_table(
        active: Activation, world: dict[str, Any]) -> None:
    client = client_for(world["requester"])
    csv = io.BytesIO(b"month,amount\nJan,2\nJan,3.5\nFeb,1\n")
    csv.name = "expenses.csv"
    done = run_form(client, "totals", {"totals-rows__file": csv})
    assert done.status == "ok", done.error
    assert done.output == {"totals": [{"month": "Jan", "total": 5.5},
                                      {"month": "Feb", "total": 1}]}
    page = client.get(reverse("tools:result", args=["acme", "month-totals", done.pk]))
    html = page.content.decode()
    assert "<table" in html and "<th scope=\"col\">month</th>" in html and "5.5" in html
    download = client.get(reverse("tools:download", args=["acme", "month-totals", done.pk,
                                                          "csv"]))
    assert download.content.decode() == "month,total\nJan,5.5\nFeb,1\n"
    assert done.pk in [r.pk for r in Invocation.objects.filter(user=world["requester"])]
    # Somebody else's result is nobody else's business.
    other = client_for(world["admin"]).get(reverse("tools:result", args=[
        "acme", "month-totals", done.pk]))
    assert other.status_code == 404


def test_a_pasted_spreadsheet_table_and_a_declared_schema(active: Activation,
                                                          world: dict[str, Any]) -> None:
    client = client_for(world["requester"])
    pasted = run_form(client, "totals", {"totals-rows": "month\tamount\nMar\t4\nMar\t1\n"})
    assert pasted.output == {"totals": [{"month": "Mar", "total": 5}]}
    greeted = run_form(client, "greet", {"greet-name": "Ada", "greet-times": "2"})
    assert greeted.output == "Hello, Ada! Hello, Ada!"
    bad = client.post(reverse("tools:run", args=["acme", "month-totals", "greet"]),
                      {"greet-times": "two"})
    assert bad.status_code == 400
    assert "Write a number" in bad.content.decode() and "Fill this in" in bad.content.decode()


def test_an_oversize_file_is_refused_with_a_clear_error(active: Activation,
                                                        world: dict[str, Any]) -> None:
    big = io.BytesIO(b"month,amount\n" + b"Jan,1\n" * 300_000)
    big.name = "big.csv"
    response = client_for(world["requester"]).post(
        reverse("tools:run", args=["acme", "month-totals", "totals"]), {"totals-rows__file": big})
    assert response.status_code == 400
    assert "the limit is 750 KB" in response.content.decode()
    assert not Invocation.objects.filter(caller="user").exists()


def test_storage_is_kept_per_team_and_never_crosses(active: Activation,
                                                    world: dict[str, Any]) -> None:
    first = run_form(client_for(world["requester"]), "count", {})
    second = run_form(client_for(world["requester"]), "count", {})
    assert (first.output, second.output) == ({"n": 1}, {"n": 2})
    assert second.log_lines == ["call number 2"]
    asked = activation_request(team=world["other"], version=active.version,
                               user=world["other_admin"])
    activation_decide(activation=asked, user=world["other_admin"], approve=True)
    other = client_for(world["other_admin"]).post(
        reverse("tools:run", args=["other", "month-totals", "count"]), {})
    assert other.status_code == 302
    theirs = Invocation.objects.latest("pk")
    invocation_perform(invocation_id=theirs.pk)
    theirs.refresh_from_db()
    assert theirs.output == {"n": 1}
    assert ToolStorage.objects.get(team=world["acme"]).data == {"n": 2}
    assert ToolStorage.objects.get(team=world["other"]).data == {"n": 1}


def test_secrets_never_reach_the_log_or_the_pages(active: Activation,
                                                  world: dict[str, Any]) -> None:
    tool_settings_save(team=world["acme"], plugin=active.plugin, version=active.version,
                       user=world["admin"], values={"greeting": "Hi", "api_key": SECRET})
    client = client_for(world["admin"])
    leaked = run_form(client, "leak", {})
    # A secret's value never enters the sandbox: reading it is an error that says how to
    # send it (api.secret in an api.http request), and the value is nowhere.
    assert leaked.status == "failed" and leaked.error_kind == "plugin_error"
    assert "never enters the sandbox" in leaked.error
    assert SECRET not in leaked.error and all(SECRET not in line for line in leaked.log_lines)
    for name, args in (("tools:result", ["acme", "month-totals", leaked.pk]),
                       ("tools:log", ["acme", "month-totals"]),
                       ("tools:settings", ["acme", "month-totals"]),
                       ("tools:detail", ["acme", "month-totals"])):
        assert SECRET not in client.get(reverse(name, args=args)).content.decode(), name
    assert not any(SECRET in str(e.after) for e in AuditEntry.objects.all())


def test_a_plugin_error_is_shown_in_plain_words(active: Activation,
                                                world: dict[str, Any]) -> None:
    failed = run_form(client_for(world["requester"]), "fail", {})
    assert failed.status == "failed" and failed.error_kind == "plugin_error"
    assert "there is nothing to add up" in failed.error


def test_the_kill_switch_refuses_calls_tells_the_teams_and_is_audited(
        active: Activation, world: dict[str, Any]) -> None:
    client = client_for(world["requester"])
    client.post(reverse("tools:run", args=["acme", "month-totals", "count"]), {})
    queued = Invocation.objects.latest("pk")
    version_block(version=active.version, user=world["staff"], reason="it sends data away")
    # A call queued before the switch is refused when it starts.
    invocation_perform(invocation_id=queued.pk)
    queued.refresh_from_db()
    assert queued.status == "refused" and "disabled" in queued.error
    # A new one is refused at once.
    again = client.post(reverse("tools:run", args=["acme", "month-totals", "count"]), {})
    assert again.status_code == 400 and "disabled this version" in again.content.decode()
    assert Notification.objects.filter(user=world["admin"],
                                       message__contains="it sends data away").exists()
    assert AuditEntry.objects.filter(action="tool.version_disabled", team=world["acme"]).exists()
    assert AuditEntry.objects.filter(action="tool.version_disabled", team=None).exists()


def test_only_site_admins_use_the_kill_switch(active: Activation, world: dict[str, Any]) -> None:
    url = reverse("tools:kill_switch")
    assert client_for(world["admin"]).post(url, {"plugin": "month-totals", "version": "1.0.0",
                                                 "reason": "x"}).status_code == 403
    response = client_for(world["staff"]).post(url, {"plugin": "month-totals",
                                                     "version": "1.0.0", "reason": "bad"})
    assert response.status_code == 302
    assert client_for(world["staff"]).get(url).content.decode().count("month-totals 1.0.0") >= 1
    plugin_page = client_for(world["staff"]).get(reverse("marketplace:plugin", args=[
        "month-totals"])).content.decode()
    assert "/tools/kill-switch/?plugin=month-totals&amp;version=1.0.0" in plugin_page
    assert "kill switch" not in client_for(world["admin"]).get(reverse(
        "marketplace:plugin", args=["month-totals"])).content.decode()


def test_the_log_keeps_the_caller_sizes_and_outcome_and_is_pruned(
        active: Activation, world: dict[str, Any], settings: Any) -> None:
    done = run_form(client_for(world["requester"]), "count", {})
    page = client_for(world["reviewer"]).get(reverse("tools:log", args=[
        "acme", "month-totals"])).content.decode()
    assert "acme-requester" in page and "count" in page and "Succeeded" in page
    assert "call number 1" in page
    assert done.input_bytes == 2 and done.output_bytes == len('{"n":1}')
    settings.TOOLS_LOG_RETENTION_DAYS = 30
    Invocation.objects.filter(pk=done.pk).update(created_at=timezone.now() - timedelta(days=31))
    invocations_prune()
    assert not Invocation.objects.filter(pk=done.pk).exists()


def test_the_publisher_sees_usage_counts_on_the_marketplace_page(
        active: Activation, world: dict[str, Any]) -> None:
    run_form(client_for(world["requester"]), "count", {})
    run_form(client_for(world["requester"]), "fail", {})
    usage = plugin_usage(active.plugin)
    assert (usage.calls, usage.failed, usage.teams) == (2, 1, 1) and usage.p95_ms > 0
    url = reverse("marketplace:plugin", args=["month-totals"])
    assert "error rate 50%" in client_for(world["requester"]).get(url).content.decode()
    assert "error rate" not in client_for(world["other_admin"]).get(url).content.decode()


def test_events_reach_on_event_activated_settings_changed_deactivated(
        active: Activation, world: dict[str, Any]) -> None:
    tool_settings_save(team=world["acme"], plugin=active.plugin, version=active.version,
                       user=world["admin"], values={"greeting": "Hi", "api_key": SECRET})
    client_for(world["admin"]).post(reverse("tools:deactivate", args=["acme", "month-totals"]))
    events = Invocation.objects.filter(caller="event").order_by("pk")
    assert [e.command for e in events] == ["activated", "settings_changed", "deactivated"]
    for event in events:
        invocation_perform(invocation_id=event.pk)
    assert {e.status for e in events.all()} == {"ok"}
    assert ToolStorage.objects.get(team=world["acme"]).data["events"] == [
        ["activated", {"version": "1.0.0", "previous_version": None}],
        ["settings_changed", {"names": ["greeting", "api_key"]}],
        ["deactivated", {"version": "1.0.0"}]]


def test_the_watchdog_runs_due_schedules_and_prunes_the_log() -> None:
    from autocoder import heartbeat
    from tools.services import invocations, schedule_runs

    assert schedule_runs.schedules_due_send in heartbeat.QUICK_SWEEPS
    assert invocations.invocations_prune in heartbeat.SLOW_SWEEPS


def test_a_call_a_dead_worker_left_running_is_closed(active: Activation,
                                                      world: dict[str, Any]) -> None:
    stuck = Invocation.objects.create(team=world["acme"], plugin=active.plugin,
                                      version=active.version, command="count", caller="user",
                                      user=world["requester"], status="running")
    Invocation.objects.filter(pk=stuck.pk).update(created_at=timezone.now() - timedelta(hours=1))
    invocations_prune()
    stuck.refresh_from_db()
    assert stuck.status == "failed" and "stopped before it finished" in stuck.error
