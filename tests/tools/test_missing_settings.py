"""Settings still missing after activation (issue 45, "No dead ends on the way"): the tool's
page lists them with a link to fill them in, and every call (the form, the API, `manage.py
tool_call`, a schedule come due) is refused before anything runs with the same words: which
setting, and where an admin enters it. Once entered, the call runs. The plugin runs for real in
the sandbox."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from html import unescape
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from teams.models import Notification
from tests.tools.conftest import PLUGIN_TOML, client_for, publish_version
from tools import selectors
from tools.models import Activation, Invocation, Schedule, ToolToken
from tools.services.activations import activation_decide, activation_request
from tools.services.invocations import (
    InvocationRefused,
    invocation_check,
    invocation_perform,
    invocation_request,
)
from tools.services.schedule_runs import schedules_due_send
from tools.services.schedules import schedule_create
from tools.services.tokens import tool_token_create
from tools.services.tool_settings import tool_settings_save

pytestmark = pytest.mark.django_db

# month-totals with its api_key needed (the greeting stays optional)
NEEDS_KEY = PLUGIN_TOML.replace('secret = true\nrequired = false\n', 'secret = true\n')
SETTINGS_PAGE = "/t/acme/tools/month-totals/settings/"
WORDS = ("the setting “api_key” (The key of your accounting system) has no value yet: a team"
         " admin enters it on the tool's Settings page")
ROWS = {"rows": [{"month": "Jan", "amount": 2}]}


@pytest.fixture
def needs_key(world: dict[str, Any]) -> Activation:
    assert NEEDS_KEY != PLUGIN_TOML
    version = publish_version(world["acme"], toml=NEEDS_KEY)
    asked = activation_request(team=world["acme"], version=version, user=world["admin"])
    return activation_decide(activation=asked, user=world["admin"], approve=True)


def calls() -> Any:
    """The calls made (the portal's own "activated" event is delivered whatever is missing)."""
    return Invocation.objects.exclude(caller=Invocation.Caller.EVENT)


def enter_key(activation: Activation, admin: Any, value: str = "sk-1") -> None:
    tool_settings_save(team=activation.team, plugin=activation.plugin,
                       version=activation.version, user=admin, values={"api_key": value})


def test_the_selector_lists_what_is_needed_and_not_entered(needs_key: Activation,
                                                           world: dict[str, Any]) -> None:
    assert [s.name for s in selectors.missing_settings(needs_key)] == ["api_key"]
    assert selectors.settings_page(needs_key) == SETTINGS_PAGE
    enter_key(needs_key, world["admin"])
    assert selectors.missing_settings(needs_key) == []
    tool_settings_save(team=needs_key.team, plugin=needs_key.plugin, version=needs_key.version,
                       user=world["admin"], values={"api_key": "", "api_key:clear": "1"})
    assert [s.name for s in selectors.missing_settings(needs_key)] == ["api_key"]


def test_invocation_check_refuses_every_caller_with_the_setting_and_where(
        needs_key: Activation) -> None:
    with pytest.raises(InvocationRefused) as refused:
        invocation_check(activation=needs_key, command="totals", payload=ROWS)
    assert refused.value.status == 409 and refused.value.missing == ("api_key",)
    assert refused.value.url == SETTINGS_PAGE
    assert str(refused.value) == f"Not run: {WORDS}, {SETTINGS_PAGE}."
    assert refused.value.said_at("https://portal.example.org/") == (
        f"Not run: {WORDS}, https://portal.example.org{SETTINGS_PAGE}.")
    # a command it does not have is still said as such (the more basic mistake first)
    with pytest.raises(InvocationRefused, match="Unknown command"):
        invocation_check(activation=needs_key, command="nope", payload={})


def test_the_tool_page_lists_the_missing_setting_with_a_link_for_the_admin(
        needs_key: Activation, world: dict[str, Any]) -> None:
    page = client_for(world["admin"]).get(reverse("tools:detail", args=["acme", "month-totals"]))
    html = page.content.decode()
    assert "Settings still missing" in html and "<strong>api_key</strong>" in html
    assert f'href="{SETTINGS_PAGE}#setting-api_key"' in html
    assert f'href="{SETTINGS_PAGE}" id="missing-settings-link"' in html
    assert "greeting" not in html.split("Settings still missing")[1].split("</section>")[0]
    # a member who cannot enter it is told who can, and gets no link to a page they cannot use
    member = client_for(world["requester"]).get(
        reverse("tools:detail", args=["acme", "month-totals"])).content.decode()
    assert "Settings still missing" in member and "a team admin enters" in member
    assert "acme-admin" in member and "missing-settings-link" not in member
    enter_key(needs_key, world["admin"])
    after = client_for(world["admin"]).get(reverse("tools:detail", args=["acme", "month-totals"]))
    assert "Settings still missing" not in after.content.decode()


def test_the_form_is_refused_in_words_and_nothing_is_queued(needs_key: Activation,
                                                            world: dict[str, Any]) -> None:
    client = client_for(world["admin"])
    url = reverse("tools:run", args=["acme", "month-totals", "totals"])
    response = client.post(url, {"totals-rows": "month,amount\nJan,2\n"})
    assert response.status_code == 400
    html = unescape(response.content.decode())
    assert f"Not run: {WORDS}, {SETTINGS_PAGE}." in html
    assert f'<a href="{SETTINGS_PAGE}">Go to the Settings page</a>' in html
    assert not calls().exists()
    enter_key(needs_key, world["admin"])
    assert client.post(url, {"totals-rows": "month,amount\nJan,2\n"}).status_code == 302
    assert calls().get().status == Invocation.Status.PENDING


def test_the_api_answers_409_with_the_full_address_then_runs_once_entered(
        needs_key: Activation, world: dict[str, Any]) -> None:
    _, raw = tool_token_create(team=world["acme"], plugin=needs_key.plugin, user=world["admin"],
                               name="books")
    url = reverse("tools:api", args=["acme", "month-totals", "totals"])
    headers = {"HTTP_AUTHORIZATION": f"Bearer {raw}"}
    refused = Client().post(url, json.dumps(ROWS), content_type="application/json", **headers)
    assert refused.status_code == 409
    body = refused.json()
    assert body["ok"] is False and body["kind"] == "settings_missing"
    assert body["missing_settings"] == ["api_key"]
    assert body["settings_url"] == f"http://testserver{SETTINGS_PAGE}"
    assert body["error"] == f"Not run: {WORDS}, http://testserver{SETTINGS_PAGE}."
    assert not calls().exists()
    enter_key(needs_key, world["admin"])
    ran = Client().post(url, json.dumps(ROWS), content_type="application/json", **headers)
    assert ran.status_code == 200, ran.content
    assert ran.json()["output"] == {"totals": [{"month": "Jan", "total": 2}]}
    assert ToolToken.objects.get().last_used_at is not None


def test_tool_call_says_which_setting_and_where(needs_key: Activation,
                                                world: dict[str, Any]) -> None:
    out = StringIO()
    with pytest.raises(CommandError) as failed:
        call_command("tool_call", "acme", "month-totals", "totals", "--payload",
                     json.dumps(ROWS), "--as", "acme-requester", "--json", stdout=out)
    assert f"refused, nothing was run: Not run: {WORDS}, {SETTINGS_PAGE}." in str(failed.value)
    printed = json.loads(out.getvalue())
    assert printed["ok"] is False and printed["error_kind"] == "refused"
    assert printed["missing_settings"] == ["api_key"]
    assert printed["settings_url"] == SETTINGS_PAGE
    assert not calls().exists()


def test_after_activation_the_admin_is_sent_to_the_list_of_what_is_missing(
        world: dict[str, Any]) -> None:
    publish_version(world["acme"], toml=NEEDS_KEY)
    client = client_for(world["admin"])
    response = client.post(reverse("tools:activate", args=["acme", "month-totals", "1.0.0"]),
                           {"decision": "approve"}, follow=True)
    html = response.content.decode()
    assert response.redirect_chain[-1][0] == reverse("tools:detail",
                                                     args=["acme", "month-totals"])
    assert "is now in use by the team. It needs 1 setting before it can run" in html
    assert "Settings still missing" in html and f"{SETTINGS_PAGE}#setting-api_key" in html
    settings_page = client.get(SETTINGS_PAGE).content.decode()
    assert "One needed setting has no value yet" in settings_page
    assert "needed, no value yet" in settings_page and "(optional)" in settings_page


def test_tool_activate_names_what_is_still_missing(world: dict[str, Any]) -> None:
    publish_version(world["acme"], toml=NEEDS_KEY)
    out = StringIO()
    call_command("tool_activate", "acme", "month-totals", "1.0.0", "--as", "acme-admin",
                 stdout=out)
    said = out.getvalue()
    assert f"still missing, so calls are refused until they are entered: {WORDS}," in said
    assert SETTINGS_PAGE in said and "--secret NAME=ENV_VAR" in said
    out = StringIO()
    call_command("tool_activate", "acme", "month-totals", "1.0.0", "--as", "acme-admin",
                 "--json", stdout=out)
    assert json.loads(out.getvalue())["missing_settings"] == ["api_key"]


def test_a_schedule_is_saved_but_does_not_start_until_the_setting_is_entered(
        needs_key: Activation, world: dict[str, Any]) -> None:
    schedule = schedule_create(activation=needs_key, user=world["reviewer"], name="Month end",
                               command="totals", payload=ROWS, when="every 1 hours")

    def due() -> datetime:
        now = timezone.now()
        Schedule.objects.filter(pk=schedule.pk).update(next_run_at=now - timedelta(seconds=1))
        return now

    # Due while the key is missing: it does not start, and its run in the log says why.
    assert schedules_due_send(now=due()) == []
    refused = calls().filter(schedule=schedule).latest("pk")
    assert refused.status == Invocation.Status.REFUSED
    assert refused.error_kind == "settings_missing"
    assert refused.error == f"Not run: {WORDS}, {SETTINGS_PAGE}."
    assert not Invocation.objects.filter(command="schedule").exists()  # its event neither
    told = Notification.objects.get(user=world["reviewer"])
    assert WORDS in told.message and "Month end" in told.message
    enter_key(needs_key, world["admin"])
    assert schedules_due_send(now=due()) == [schedule.pk]
    ran = invocation_perform(invocation_id=calls().filter(schedule=schedule).latest("pk").pk)
    assert ran is not None and ran.status == Invocation.Status.OK, ran and ran.error
    assert not Schedule.objects.get(pk=schedule.pk).failing


def test_a_form_call_queued_before_the_key_was_removed_is_refused_when_its_turn_comes(
        needs_key: Activation, world: dict[str, Any]) -> None:
    enter_key(needs_key, world["admin"])
    queued = invocation_request(activation=needs_key, user_id=world["requester"].pk,
                                command="totals", payload=ROWS)
    tool_settings_save(team=needs_key.team, plugin=needs_key.plugin, version=needs_key.version,
                       user=world["admin"], values={"api_key": "", "api_key:clear": "1"})
    done = invocation_perform(invocation_id=queued.pk)
    assert done is not None and done.status == Invocation.Status.REFUSED
    assert done.error == f"Not run: {WORDS}, {SETTINGS_PAGE}."
    page = client_for(world["requester"]).get(
        reverse("tools:result", args=["acme", "month-totals", done.pk]))
    assert WORDS in unescape(page.content.decode())
