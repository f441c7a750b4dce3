"""`manage.py tool_activate` and `manage.py tool_call`: the page's and the API's services, rules
and audit from the command line. A secret comes from an environment variable, is stored sealed
and is never printed; a call answers one JSON object and fails with a non-zero exit status.
The plugin runs for real in the sandbox."""

from __future__ import annotations

import json
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from autocoder.sealing import unseal
from teams.models import AuditEntry
from tests.tools.conftest import publish_version
from tools.models import Activation, Invocation, ToolSetting
from tools.services.tool_settings import settings_for_call

pytestmark = pytest.mark.django_db
SECRET = "sk-from-the-environment-5678"


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


def activate(*extra: str, user: str = "acme-admin", version: str = "1.0.0") -> str:
    return run("tool_activate", "acme", "month-totals", version, "--as", user, *extra)


def audit_text() -> str:
    return " ".join(f"{e.action} {e.before} {e.after} {e.target_repr}"
                    for e in AuditEntry.objects.all())


def test_an_admin_activates_with_a_setting_and_a_secret_from_the_environment(
        world: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    version = publish_version(world["acme"], visibility="public")
    monkeypatch.setenv("ACME_ACCOUNTING_KEY", SECRET)
    said = activate("--setting", "greeting=Hi", "--secret", "api_key=ACME_ACCOUNTING_KEY")
    assert "month-totals 1.0.0 is now in use by Acme, approved by acme-admin." in said
    assert "settings saved: greeting, api_key (secret, stored sealed)" in said
    assert SECRET not in said
    activation = Activation.objects.get(status="active")
    assert activation.version == version and activation.decided_by == world["admin"]
    row = ToolSetting.objects.get(name="api_key")
    assert row.secret and SECRET not in row.value and unseal(row.value) == SECRET
    values, _ = settings_for_call(team=world["acme"], plugin=version.plugin, version=version)
    assert values == {"greeting": "Hi", "api_key": SECRET}
    actions = list(AuditEntry.objects.filter(team=world["acme"]).order_by("pk")
                   .values_list("action", flat=True))
    assert actions == ["tool.activation_requested", "tool.activated", "tool.settings_changed"]
    assert AuditEntry.objects.get(action="tool.settings_changed").after == {
        "settings": ["greeting", "api_key"]}
    assert SECRET not in audit_text()

    # Again, the same: nothing to do, nothing recorded.
    again = activate("--setting", "greeting=Hi", "--secret", "api_key=ACME_ACCOUNTING_KEY")
    assert "Acme already uses month-totals 1.0.0: nothing to activate." in again
    assert "settings: nothing changed." in again
    assert AuditEntry.objects.filter(team=world["acme"]).count() == 3

    # An upgrade is a new activation, decided at once; the settings stay.
    publish_version(world["acme"], "1.1.0", visibility="public")
    upgraded = json.loads(activate("--json", version="1.1.0"))
    assert upgraded["activated"] is True and upgraded["previous_version"] == "1.0.0"
    assert Activation.objects.get(status="active").version.version == "1.1.0"
    assert ToolSetting.objects.get(name="greeting").value == "Hi"


def test_a_non_admin_is_refused_with_the_pages_words(world: dict[str, Any],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    publish_version(world["acme"], visibility="public")
    monkeypatch.setenv("ACME_ACCOUNTING_KEY", SECRET)
    for user in ("acme-requester", "acme-reviewer"):
        with pytest.raises(CommandError, match="Only admins of Acme activate plugins as tools"):
            activate("--secret", "api_key=ACME_ACCOUNTING_KEY", user=user)
    with pytest.raises(CommandError, match="Only members of Acme"):
        activate(user="other-admin")
    assert not Activation.objects.exists() and not ToolSetting.objects.exists()


def test_unknown_settings_and_secrets_on_the_command_line_are_refused(
        world: dict[str, Any]) -> None:
    publish_version(world["acme"], visibility="public")
    with pytest.raises(CommandError) as refused:
        activate("--setting", "colour=red")
    assert "no setting named colour" in str(refused.value)
    assert "greeting, api_key (secret)" in str(refused.value)
    with pytest.raises(CommandError, match="api_key is a secret: give it as --secret"):
        activate("--setting", f"api_key={SECRET}")
    with pytest.raises(CommandError, match="write it as NAME=VALUE"):
        activate("--setting", "greeting")
    assert not Activation.objects.exists() and not ToolSetting.objects.exists()
    assert not AuditEntry.objects.filter(team=world["acme"]).exists()


def test_a_missing_or_empty_environment_variable_is_named_and_nothing_is_saved(
        world: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    publish_version(world["acme"], visibility="public")
    monkeypatch.delenv("NO_SUCH_KEY_VARIABLE", raising=False)
    monkeypatch.setenv("EMPTY_KEY_VARIABLE", "")
    for variable in ("NO_SUCH_KEY_VARIABLE", "EMPTY_KEY_VARIABLE"):
        with pytest.raises(CommandError, match=f"{variable} \\(for api_key\\)"):
            activate("--setting", "greeting=Hi", "--secret", f"api_key={variable}")
    assert not Activation.objects.exists() and not ToolSetting.objects.exists()


def call(*args: str) -> tuple[dict[str, Any], CommandError | None]:
    out = StringIO()
    try:
        call_command("tool_call", "acme", "month-totals", *args, "--json", stdout=out,
                     stderr=StringIO())
    except CommandError as exc:
        return json.loads(out.getvalue()), exc
    return json.loads(out.getvalue()), None


def test_a_call_prints_one_json_object_and_is_logged(active: Activation,
                                                     world: dict[str, Any]) -> None:
    answer, failed = call("totals", "--as", "acme-requester", "--payload",
                          '{"rows": [{"month": "Jan", "amount": 2}, {"month": "Jan", '
                          '"amount": 3}]}')
    assert failed is None
    assert answer == {"ok": True, "output": {"totals": [{"month": "Jan", "total": 5}]},
                      "error": "", "error_kind": "", "invocation": answer["invocation"],
                      "http_requests": []}
    logged = Invocation.objects.get(pk=answer["invocation"])
    assert logged.status == "ok" and logged.caller == "user" and logged.user == world["requester"]
    assert logged.input_bytes > 0 and logged.payload == {}
    # Without --as the call is the activating admin's; an outsider is refused.
    assert Invocation.objects.get(pk=call("count")[0]["invocation"]).user == world["admin"]
    with pytest.raises(CommandError, match="other-admin is not a member of Acme"):
        call_command("tool_call", "acme", "month-totals", "count", "--as", "other-admin",
                     "--json", stdout=StringIO())


def test_a_failing_call_exits_non_zero_with_its_error_kind(active: Activation) -> None:
    answer, failed = call("fail")
    assert failed is not None and failed.returncode != 0
    assert answer["ok"] is False and answer["error_kind"] == "plugin_error"
    assert "nothing to add up" in answer["error"] and answer["output"] is None
    assert Invocation.objects.get(pk=answer["invocation"]).status == "failed"
    refused, failed = call("no-such-command")
    assert failed is not None and refused["ok"] is False and refused["error_kind"] == "refused"
    assert "Unknown command 'no-such-command'" in refused["error"]


def test_a_bad_payload_is_refused_and_nothing_runs(active: Activation) -> None:
    before = Invocation.objects.count()
    for payload, words in (('{"rows": [', "not JSON the tool can use"),
                           ("[1, 2]", "must be a JSON object"),
                           ('{"n": NaN}', "NaN and Infinity")):
        with pytest.raises(CommandError, match=words):
            call_command("tool_call", "acme", "month-totals", "totals", "--payload", payload,
                         stdout=StringIO())
    assert Invocation.objects.count() == before


def test_a_secret_stays_out_of_what_a_call_prints(active: Activation,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACME_ACCOUNTING_KEY", SECRET)
    activate("--secret", "api_key=ACME_ACCOUNTING_KEY")
    out = StringIO()
    with pytest.raises(CommandError) as failed:  # the plugin may not read the secret
        call_command("tool_call", "acme", "month-totals", "leak", stdout=out)
    said = out.getvalue() + str(failed.value)
    assert "never enters the sandbox" in said and SECRET not in said
