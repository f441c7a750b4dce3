"""The curl example of docs/tools.md ("Sending one by hand") works as printed: run with bash
against a live portal (daphne on the test database), the trigger's address and secret put in
its place, it answers 202 and the command runs (in the sandbox) with the event it sent."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from tests.live import live_asgi_server
from tests.tools.conftest import publish_version
from tests.tools.test_triggers import ECHO_PY, ECHO_TOML
from tools.models import Delivery
from tools.services.activations import activation_decide, activation_request
from tools.services.invocations import invocation_perform
from tools.services.triggers import trigger_create

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
PLACEHOLDER = "https://YOUR-PORTAL/hooks/YOUR-TRIGGER-ID/"


def docs_example() -> str:
    text = (Path(settings.BASE_DIR) / "docs" / "tools.md").read_text()
    section = text.split("### Sending one by hand", 1)[1]
    found = re.search(r"```sh\n(.*?)```", section, re.S)
    assert found, "docs/tools.md lost its curl example"
    return found.group(1)


def test_the_documented_curl_example_answers_202(world: dict[str, Any]) -> None:
    version = publish_version(world["acme"], toml=ECHO_TOML, body=ECHO_PY)
    activation = activation_decide(activation=activation_request(
        team=world["acme"], version=version, user=world["admin"]), user=world["admin"],
        approve=True)
    trigger, secret = trigger_create(activation=activation, user=world["admin"],
                                     command="echo", scheme="plain")
    example = docs_example()
    assert PLACEHOLDER in example and "$TRIGGER_SECRET" in example
    with live_asgi_server() as server:
        script = example.replace(PLACEHOLDER, f"{server.url}hooks/{trigger.public_id}/")
        done = subprocess.run(
            ["bash", "-c", script.rstrip() + " --silent --show-error --max-time 60 "
                                             "--write-out '\\n%{http_code}'"],
            capture_output=True, text=True, timeout=90, check=False,
            env={"PATH": "/usr/bin:/bin", "TRIGGER_SECRET": secret})
    assert done.returncode == 0, done.stderr
    body, _, status = done.stdout.rpartition("\n")
    assert status == "202", body
    answer = json.loads(body)
    assert answer["delivery_id"] == "order-1042"
    assert Delivery.objects.get(pk=answer["delivery"]).outcome == "started"
    call = invocation_perform(invocation_id=answer["invocation"])
    assert call is not None and call.status == "ok", call and call.error
    assert call.output == {"event": {"order": 1042, "total": 99.5}}
