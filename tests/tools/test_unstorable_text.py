"""A plugin whose error, log lines, answer or storage hold a NUL (`\\x00`) or a lone surrogate:
PostgreSQL keeps neither, so saving the call used to fail (a 500 for the API, a call left
"running" for ten minutes). They are replaced by U+FFFD before anything is saved, and the call
ends with its real outcome. The plugin runs for real in the sandbox."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from teams.models import Notification
from tests.tools.conftest import client_for, publish_version
from tools.models import Activation, Invocation, Schedule, ToolStorage
from tools.services.activations import activation_decide, activation_request
from tools.services.invocations import _finish, invocation_perform
from tools.services.schedule_runs import schedules_due_send
from tools.services.schedules import schedule_create
from tools.services.tokens import tool_token_create

pytestmark = pytest.mark.django_db(transaction=True)
FFFD = "\ufffd"

# The escapes are the plugin's source text: its strings hold a real NUL and a lone surrogate.
NOISY = '''
class Plugin:
    def on_initialize(self, api):
        self.api = api

    def on_command(self, name, payload):
        if name == "fail":
            self.api.log("read \\x00 from the device")
            self.api.log("half a pair: \\ud800")
            raise ValueError("bad byte \\x00 and \\ud800 in the file")
        if name == "count":
            self.api.storage["last\\x00"] = "x\\x00"
            return {"text\\x00": "a\\x00b", "half": "\\ud800"}
        raise ValueError(f"unknown command: {name!r}")
'''


@pytest.fixture
def noisy(world: dict[str, Any]) -> Activation:
    version = publish_version(world["acme"], body=NOISY)
    asked = activation_request(team=world["acme"], version=version, user=world["admin"])
    return activation_decide(activation=asked, user=world["admin"], approve=True)


def run_form(client: Client, command: str) -> Invocation:
    response = client.post(reverse("tools:run", args=["acme", "month-totals", command]), {})
    assert response.status_code == 302, response.content.decode()[:2000]
    invocation = Invocation.objects.filter(caller="user").latest("pk")
    invocation_perform(invocation_id=invocation.pk)
    invocation.refresh_from_db()
    return invocation


def clean(text: str) -> bool:
    return "\x00" not in text and not any("\ud800" <= c <= "\udfff" for c in text)


def test_a_nul_in_the_error_and_the_log_is_saved_replaced(noisy: Activation,
                                                          world: dict[str, Any]) -> None:
    client = client_for(world["requester"])
    done = run_form(client, "fail")
    assert done.status == "failed" and done.error_kind == "plugin_error"
    assert f"bad byte {FFFD} and {FFFD} in the file" in done.error
    assert done.log_lines == [f"read {FFFD} from the device", f"half a pair: {FFFD}"]
    assert clean(done.error) and all(clean(line) for line in done.log_lines)
    page = client.get(reverse("tools:result", args=["acme", "month-totals", done.pk]))
    assert page.status_code == 200 and "bad byte" in page.content.decode()
    log = client.get(reverse("tools:log", args=["acme", "month-totals"]))
    assert log.status_code == 200 and "half a pair" in log.content.decode()
    assert not Invocation.objects.filter(status__in=["pending", "running"],
                                         caller="user").exists()


def test_an_answer_and_a_storage_with_a_nul_are_kept_replaced(noisy: Activation,
                                                              world: dict[str, Any]) -> None:
    done = run_form(client_for(world["requester"]), "count")
    assert done.status == "ok", done.error
    assert done.output == {f"text{FFFD}": f"a{FFFD}b", "half": FFFD}
    assert ToolStorage.objects.get(team=world["acme"]).data == {f"last{FFFD}": f"x{FFFD}"}


def test_the_api_answers_the_plugins_failure_not_a_500(noisy: Activation,
                                                       world: dict[str, Any]) -> None:
    raw = tool_token_create(team=world["acme"], plugin=noisy.plugin, user=world["admin"],
                            name="accounting")[1]
    url = reverse("tools:api", args=["acme", "month-totals", "fail"])
    response = Client().post(url, b"{}", content_type="application/json",
                             HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert response.status_code == 422, response.content[:500]
    assert response.json()["error"].endswith(f"bad byte {FFFD} and {FFFD} in the file")
    logged = Invocation.objects.get(pk=response.json()["invocation"])
    assert logged.status == "failed" and clean(logged.error)
    answered = Client().post(reverse("tools:api", args=["acme", "month-totals", "count"]),
                             b"{}", content_type="application/json",
                             HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert answered.status_code == 200 and answered.json()["output"]["half"] == FFFD


def test_a_scheduled_failure_with_a_nul_tells_the_owner(noisy: Activation,
                                                        world: dict[str, Any]) -> None:
    schedule = schedule_create(activation=noisy, user=world["reviewer"], name="Nightly",
                               command="fail", payload={}, when="every 1 hour")
    now = timezone.now()
    Schedule.objects.filter(pk=schedule.pk).update(next_run_at=now - timedelta(seconds=1))
    assert schedules_due_send(now=now) == [schedule.pk]
    queued = Invocation.objects.get(schedule=schedule)
    invocation_perform(invocation_id=queued.pk)
    queued.refresh_from_db()
    assert queued.status == "failed" and clean(queued.error)
    note = Notification.objects.get(user=world["reviewer"], message__contains="Nightly")
    assert f"bad byte {FFFD}" in note.message


def test_an_outcome_the_database_refuses_still_ends_the_call(noisy: Activation,
                                                             world: dict[str, Any]) -> None:
    # The safety net behind the runtime's cleaning: whatever else cannot be saved, the call
    # ends as a failure that says so, instead of staying "running".
    stuck = Invocation.objects.create(team=world["acme"], plugin=noisy.plugin,
                                      version=noisy.version, command="fail", caller="user",
                                      user=world["requester"], status="running")
    done = _finish(stuck, status=Invocation.Status.FAILED, error="raw \x00 byte",
                   error_kind="plugin_error", log_lines=["\x00"])
    assert done.status == "failed" and done.error_kind == "bad_output"
    assert "could not be saved" in done.error and done.finished_at is not None


def test_a_call_answered_in_the_request_is_logged_even_when_its_outcome_is_refused(
        noisy: Activation, world: dict[str, Any]) -> None:
    # An API or MCP call's row is written once, as it ends (invocation_call): when that one
    # INSERT is refused, the row is still written, as a failure that says so.
    unsaved = Invocation(team=world["acme"], plugin=noisy.plugin, version=noisy.version,
                         command="fail", caller="token", status="running")
    done = _finish(unsaved, status=Invocation.Status.FAILED, error="raw \x00 byte",
                   error_kind="plugin_error", log_lines=["\x00"],
                   http_requests=[{"url": "http://x/\x00"}])
    assert done.pk is not None
    kept = Invocation.objects.get(pk=done.pk)
    assert kept.status == "failed" and kept.error_kind == "bad_output"
    assert "could not be saved" in kept.error and kept.http_requests == []
