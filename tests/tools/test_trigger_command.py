"""`manage.py tool_trigger`, run as a real command in a subprocess on the test database: the
trigger and its address (in words and as JSON), the secret from TRIGGER_SECRET or made and
printed once, and the refusals that save nothing. A delivery signed with the secret then
starts the command (the request through Django's test client)."""

from __future__ import annotations

import hashlib
import hmac
import json
import subprocess
import sys
from typing import Any

import pytest
from django.conf import settings
from django.test import Client

from tests.live import child_env
from tests.tools.conftest import publish_version
from tests.tools.test_triggers import ECHO_PY, ECHO_TOML
from tools.models import Activation, Trigger
from tools.services.activations import activation_decide, activation_request

pytestmark = [pytest.mark.django_db(transaction=True)]
SECRET = "whsec_from-the-environment-0123456789"


@pytest.fixture
def echo(world: dict[str, Any]) -> Activation:
    version = publish_version(world["acme"], toml=ECHO_TOML, body=ECHO_PY)
    asked = activation_request(team=world["acme"], version=version, user=world["admin"])
    return activation_decide(activation=asked, user=world["admin"], approve=True)


def manage(*args: str, secret: str | None = None) -> subprocess.CompletedProcess[str]:
    env = child_env()
    env.pop("TRIGGER_SECRET", None)
    if secret is not None:
        env["TRIGGER_SECRET"] = secret
    return subprocess.run([sys.executable, "manage.py", *args], cwd=settings.BASE_DIR,
                          env=env, capture_output=True, text=True, timeout=300)


def github_delivery(path: str, secret: str) -> Any:
    body = json.dumps({"action": "opened"}).encode()
    signature = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return Client().post(path, data=body, content_type="application/json",
                         headers={"X-Hub-Signature-256": f"sha256={signature}",
                                  "X-GitHub-Delivery": "cli-1"})


def test_the_secret_comes_from_the_environment(echo: Activation, world: dict[str, Any]) -> None:
    done = manage("tool_trigger", "acme", "month-totals", "echo", "--as", "acme-admin",
                  "--scheme", "github", "--input", '{"source": "cli"}', "--name", "Issues",
                  "--base-url", "https://portal.example.org/", "--json", secret=SECRET)
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout)
    trigger = Trigger.objects.get(pk=said["trigger"])
    assert (trigger.name, trigger.command, trigger.scheme, trigger.fixed,
            trigger.approved_by) == ("Issues", "echo", "github", {"source": "cli"},
                                     world["admin"])
    assert said["url"] == f"https://portal.example.org/hooks/{trigger.public_id}/"
    assert said["secret"] is None and said["secret_set"] is True
    assert SECRET not in done.stdout + done.stderr
    assert github_delivery(said["path"], SECRET).status_code == 202


def test_without_the_variable_a_secret_is_made_and_printed_once(
        echo: Activation, world: dict[str, Any]) -> None:
    done = manage("tool_trigger", "acme", "month-totals", "echo", "--as", "acme-admin",
                  "--scheme", "plain", secret="")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("Trigger ") and "approved by acme-admin" in lines[0]
    address = next(line for line in lines if line.startswith("  address: "))
    assert address.endswith(f"/hooks/{Trigger.objects.get().public_id}/")
    shown = next(line for line in lines if "shown once, TRIGGER_SECRET was not set" in line)
    made = shown.rsplit(" ", 1)[1]
    assert made.startswith("whsec_") and len(made) > 40
    stripe = manage("tool_trigger", "acme", "month-totals", "echo", "--as", "acme-admin",
                    "--scheme", "stripe", "--json")
    assert stripe.returncode == 0, stripe.stderr
    said = json.loads(stripe.stdout)
    assert said["secret"] is None and said["secret_set"] is False


@pytest.mark.parametrize(("args", "why"), [
    (["--as", "acme-reviewer", "--scheme", "github"], "admin"),
    (["--as", "acme-admin", "--scheme", "github", "--input", "[1]"],
     "--input must be a JSON object"),
    (["--as", "acme-admin", "--scheme", "github", "--input", '{"event": 1}'],
     "also name “event”"),
    (["--as", "acme-admin", "--scheme", "smoke-signals"], "invalid choice"),
    (["--as", "nobody", "--scheme", "github"], "no user named 'nobody'"),
])
def test_refusals_save_nothing(echo: Activation, world: dict[str, Any], args: list[str],
                               why: str) -> None:
    done = manage("tool_trigger", "acme", "month-totals", "echo", *args, secret=SECRET)
    assert done.returncode != 0 and why in done.stderr, done.stderr
    assert not Trigger.objects.exists()


def test_an_unknown_command_is_refused(echo: Activation, world: dict[str, Any]) -> None:
    done = manage("tool_trigger", "acme", "month-totals", "dance", "--as", "acme-admin",
                  "--scheme", "github", secret=SECRET)
    assert done.returncode != 0 and "Unknown command 'dance'" in done.stderr, done.stderr
    assert "Nothing was saved." in done.stderr and not Trigger.objects.exists()
