"""Address settings (issue 45): a system whose address the requester did not know becomes a
setting of `kind = "address"`; the team admin who activates the plugin enters the address, sees
it as a permission and approves it, recorded with the activation (ApprovedAddress, audit log).
api.http reaches that host only while the setting names an approved host, with the same address
rules as declared hosts (docs/safety.md, "Hosts a version may reach").

The "booking system" is a loopback HTTP server of this test, allowed by TOOLS_INTERNAL_HOSTS
(tests reach only loopback addresses; a real install would use a public name and need no
allowlist). The plugin runs for real in the sandbox; `manage.py tool_activate` runs in a
subprocess on the test database.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.urls import reverse

from autocoder.plugins import ManifestError, parse_manifest, render_manifest
from teams.models import AuditEntry
from tests.live import child_env
from tests.tools.conftest import PLUGIN_TOML, client_for, publish_version
from tools.models import Activation, ApprovedAddress, ToolSetting
from tools.services.activations import activation_request
from tools.services.address_approval import AddressesRefused, activation_approve
from tools.services.invocations import invocation_call
from tools.services.tool_settings import SettingsError, tool_settings_save

BOOKINGS_PY = '''"""Reads the week's hours from the team's booking system."""


class Plugin:
    def on_initialize(self, api):
        self.api = api

    def on_command(self, name, payload):
        if name == "hours":
            base = self.api.settings["booking_address"]
            answer = self.api.http.get(base + "/hours", params={"week": payload.get("week", "")})
            return {"status": answer.status, "hours": answer.json()["hours"]}
        if name == "elsewhere":  # a URL of the caller's, not the address setting's
            return {"status": self.api.http.get(payload["url"]).status}
        raise ValueError(name)
'''


def bookings_toml() -> str:
    toml = PLUGIN_TOML.replace('name = "greeting"\ndescription = "The word it greets with"',
                               'name = "booking_address"\n'
                               'description = "The web address of our booking system"\n'
                               'kind = "address"')
    commands = "".join(f'\n[[commands]]\nname = "{name}"\ndescription = "{name}"\n'
                       for name in ("hours", "elsewhere"))
    return (toml.split("[[commands]]", 1)[0] + commands.lstrip("\n")).replace(
        '"month-totals"', '"bookings"')


class BookingService:
    """The stand-in booking system: it answers every GET and keeps the paths asked for."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        service = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                service.paths.append(self.path)
                body = b'{"hours": 12}'
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"


def _serve() -> Iterator[BookingService]:
    service = BookingService()
    thread = threading.Thread(target=service.server.serve_forever, daemon=True)
    thread.start()
    yield service
    service.server.shutdown()
    service.server.server_close()


@pytest.fixture
def bookings() -> Iterator[BookingService]:
    yield from _serve()


@pytest.fixture
def elsewhere() -> Iterator[BookingService]:
    yield from _serve()


@pytest.fixture
def version(world: dict[str, Any], settings: Any) -> Any:
    settings.TOOLS_INTERNAL_HOSTS = frozenset({"127.0.0.1"})
    return publish_version(world["acme"], name="bookings", body=BOOKINGS_PY, toml=bookings_toml())


def test_plugin_toml_marks_an_address_setting_and_refuses_a_secret_one() -> None:
    text = bookings_toml().format(version="1.0.0").replace("month_totals.", "bookings.")
    manifest = parse_manifest(text)
    assert [s.name for s in manifest.address_settings] == ["booking_address"]
    assert manifest.hosts == ()  # the address is not declared: the admin approves it
    assert 'kind = "address"' in render_manifest(manifest)
    with pytest.raises(ManifestError, match="cannot be a secret"):
        parse_manifest(text.replace('kind = "address"', 'kind = "address"\nsecret = true'))
    with pytest.raises(ManifestError, match='kind must be "address" or left out'):
        parse_manifest(text.replace('kind = "address"', 'kind = "url"'))


@pytest.mark.django_db
def test_the_admin_approves_the_address_and_only_that_host_is_reached(
        world: dict[str, Any], version: Any, bookings: BookingService,
        elsewhere: BookingService) -> None:
    asked = activation_request(team=world["acme"], version=version, user=world["requester"])
    activation = activation_approve(activation=asked, user=world["admin"],
                                    addresses={"booking_address": bookings.url + "/"})
    approval = ApprovedAddress.objects.get(activation=activation)
    assert (approval.setting, approval.host, approval.approved_by) == (
        "booking_address", f"http://127.0.0.1:{bookings.port}", world["admin"])
    audit = AuditEntry.objects.get(action="tool.address_approved")
    assert audit.actor == world["admin"] and audit.after["host"] == approval.host
    # kept as the URL the plugin builds its requests from
    assert ToolSetting.objects.get(name="booking_address").value == bookings.url

    called = invocation_call(activation=activation, token_id=None, command="hours",
                             payload={"week": "12"}, user_id=world["admin"].pk)
    assert called.status == "ok", called.error
    assert called.output == {"status": 200, "hours": 12}
    assert bookings.paths == ["/hours?week=12"]

    # Another host, loopback too and allowed by TOOLS_INTERNAL_HOSTS: never approved.
    other = invocation_call(activation=activation, token_id=None, command="elsewhere",
                            payload={"url": elsewhere.url + "/"}, user_id=world["admin"].pk)
    assert other.status == "failed"
    assert "is neither one of the hosts this plugin declared" in other.error
    assert f"nor an address a team admin approved for it (approved: {approval.host})" \
        in other.error
    assert elsewhere.paths == []

    # The setting changed behind the admin's back: the new host is not approved.
    ToolSetting.objects.filter(name="booking_address").update(value=elsewhere.url)
    moved = invocation_call(activation=activation, token_id=None, command="hours", payload={},
                            user_id=world["admin"].pk)
    assert moved.status == "failed" and elsewhere.paths == []
    assert (f"the address entered for booking_address (http://127.0.0.1:{elsewhere.port}) "
            "is not approved") in moved.error

    # An admin who saves it on the settings page approves it.
    tool_settings_save(team=world["acme"], plugin=activation.plugin, version=version,
                       user=world["admin"], values={"booking_address": elsewhere.url})
    again = invocation_call(activation=activation, token_id=None, command="hours", payload={},
                            user_id=world["admin"].pk)
    assert again.status == "ok", again.error
    assert elsewhere.paths == ["/hours?week="]
    assert ApprovedAddress.objects.filter(activation=activation).count() == 2


@pytest.mark.django_db
def test_no_address_yet_is_said_in_words(world: dict[str, Any], version: Any) -> None:
    asked = activation_request(team=world["acme"], version=version, user=world["admin"])
    activation = activation_approve(activation=asked, user=world["admin"])
    called = invocation_call(activation=activation, token_id=None, command="elsewhere",
                             payload={"url": "http://127.0.0.1:9/"}, user_id=world["admin"].pk)
    assert called.status == "failed"
    assert "booking_address has no address yet: a team admin enters it" in called.error
    assert not ApprovedAddress.objects.exists()


@pytest.mark.django_db
def test_what_is_not_an_address_is_refused_and_nothing_is_saved(
        world: dict[str, Any], version: Any, settings: Any) -> None:
    asked = activation_request(team=world["acme"], version=version, user=world["admin"])
    with pytest.raises(AddressesRefused, match="not a web address the tool can reach"):
        activation_approve(activation=asked, user=world["admin"],
                           addresses={"booking_address": "bookings example org"})
    settings.TOOLS_INTERNAL_HOSTS = frozenset()
    with pytest.raises(AddressesRefused, match="TOOLS_INTERNAL_HOSTS"):
        activation_approve(activation=asked, user=world["admin"],
                           addresses={"booking_address": "http://10.0.0.5:8080"})
    asked.refresh_from_db()
    assert asked.status == "pending" and not ToolSetting.objects.exists()
    assert not ApprovedAddress.objects.exists()
    with pytest.raises(SettingsError, match="booking_address"):
        tool_settings_save(team=world["acme"], plugin=version.plugin, version=version,
                           user=world["admin"], values={"booking_address": "*.example.org"})


@pytest.mark.django_db
def test_the_review_page_shows_the_address_as_a_permission_and_takes_it(
        world: dict[str, Any], version: Any, bookings: BookingService) -> None:
    admin = client_for(world["admin"])
    url = reverse("tools:activate", args=["acme", "bookings", "1.0.0"])
    html = admin.get(url).content.decode()
    assert "<strong>the address your team enters as “booking_address”</strong>" in html
    assert "None entered yet: whoever enters it approves it." in html
    assert '<label for="address-booking_address">The web address of our booking system' in html
    assert "Other services: none" not in html  # never "none" above "sends data to"

    refused = admin.post(url, {"decision": "approve", "comment": "for the hours",
                               "address-booking_address": "not an address"})
    assert refused.status_code == 400
    page = refused.content.decode()
    assert 'id="address-booking_address-error"' in page and 'value="not an address"' in page
    assert "for the hours</textarea>" in page
    assert not Activation.objects.filter(status="active").exists()

    pending = Activation.objects.get(status="pending")
    done = admin.post(reverse("tools:activation", args=["acme", pending.pk]), {
        "decision": "approve", "address-booking_address": bookings.url})
    assert done.status_code == 302
    shown = admin.get(reverse("tools:activation", args=["acme", pending.pk])).content.decode()
    assert (f"Entered by your team: sends data to <strong>http://127.0.0.1:{bookings.port}"
            "</strong>, approved by acme-admin") in shown
    assert shown.count('id="address-permission-booking_address"') == 1  # one line, one list


@pytest.mark.django_db
def test_the_settings_page_says_saving_approves_the_address_and_which_it_approved(
        world: dict[str, Any], version: Any) -> None:
    activation = activation_approve(
        activation=activation_request(team=world["acme"], version=version,
                                      user=world["admin"]), user=world["admin"])
    admin = client_for(world["admin"])
    url = reverse("tools:settings", args=["acme", "bookings"])

    def approval_words() -> str:
        html = admin.get(url).content.decode()
        found = re.search(r'<p class="small" id="setting-booking_address-approval">(.*?)</p>',
                          html, re.S)
        assert found, "no words next to the address field"
        assert 'aria-describedby="setting-booking_address-help setting-booking_address-' \
            'approval"' in html
        return " ".join(re.sub(r"<[^>]+>", "", found.group(1)).split())

    before = approval_words()
    assert before.startswith("A web address: saving it approves it, and the tool may then send"
                             " data to it and read from it")
    assert before.endswith("None entered yet.")
    saved = admin.post(url, {"booking_address": "bookings.example.org", "api_key": ""},
                       follow=True)
    page = saved.content.decode()
    assert "Saved (booking_address); approved: sends data to bookings.example.org." in page
    assert approval_words().endswith(
        "Approved: sends data to bookings.example.org, approved by acme-admin.")
    assert ApprovedAddress.objects.get(activation=activation).host == "bookings.example.org"

    # Changed behind the admins' back: not approved, until an admin saves it (even unchanged).
    ToolSetting.objects.filter(name="booking_address").update(value="https://other.example.org")
    assert "Not approved yet: other.example.org;" in approval_words()
    again = admin.post(url, {"booking_address": "https://other.example.org", "api_key": ""},
                       follow=True)
    assert "Saved; approved: sends data to other.example.org." in again.content.decode()
    plain = admin.post(url, {"booking_address": "https://other.example.org", "api_key": ""},
                       follow=True)
    assert "Nothing changed." in plain.content.decode()


def _tool_activate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", "tool_activate", "acme", "bookings", "1.0.0",
         "--as", "acme-admin", *args], cwd=django_settings.BASE_DIR, capture_output=True,
        text=True, timeout=120, env=child_env(TOOLS_INTERNAL_HOSTS="127.0.0.1"))


@pytest.mark.django_db(transaction=True)
def test_tool_activate_takes_the_address_and_says_it_approves_it(
        world: dict[str, Any], version: Any, bookings: BookingService) -> None:
    bad = _tool_activate("--setting", "booking_address=no such address")
    assert bad.returncode != 0
    assert "booking_address: This is not a web address the tool can reach" in bad.stderr
    assert "nothing was saved" in bad.stderr
    assert not Activation.objects.filter(status="active").exists()

    done = _tool_activate("--setting", f"booking_address={bookings.url}/api")
    assert done.returncode == 0, done.stderr
    assert "bookings 1.0.0 is now in use by Acme, approved by acme-admin." in done.stdout
    assert (f"address approved: sends data to and reads from http://127.0.0.1:{bookings.port} "
            "(booking_address), approved by acme-admin") in done.stdout
    activation = Activation.objects.get(status="active")
    assert ApprovedAddress.objects.get(activation=activation).approved_by == world["admin"]
    assert ToolSetting.objects.get(name="booking_address").value == f"{bookings.url}/api"

    again = _tool_activate("--json")
    answer = json.loads(again.stdout)
    assert answer["activated"] is False
    assert answer["addresses"][0]["host"] == f"http://127.0.0.1:{bookings.port}"
    assert answer["addresses"][0]["approved_by"] == "acme-admin"


@pytest.mark.django_db
def test_an_upgrade_and_a_roll_back_approve_the_address_already_entered(
        world: dict[str, Any], version: Any, bookings: BookingService) -> None:
    from tools.services.activations import activation_rollback

    first = activation_approve(
        activation=activation_request(team=world["acme"], version=version, user=world["admin"]),
        user=world["admin"], addresses={"booking_address": bookings.url})
    newer = publish_version(world["acme"], "1.1.0", name="bookings", body=BOOKINGS_PY,
                            toml=bookings_toml())
    upgraded = activation_approve(
        activation=activation_request(team=world["acme"], version=newer,
                                      user=world["requester"]),
        user=world["admin"])
    assert upgraded.pk != first.pk
    assert ApprovedAddress.objects.get(activation=upgraded).host == \
        f"http://127.0.0.1:{bookings.port}"
    back = activation_rollback(team=world["acme"], plugin=version.plugin, user=world["admin"])
    assert back.version == version
    assert ApprovedAddress.objects.filter(activation=back).count() == 1
    called = invocation_call(activation=back, token_id=None, command="hours", payload={},
                             user_id=world["admin"].pk)
    assert called.status == "ok", called.error
