"""Production security settings and the Content-Security-Policy.

`check --deploy` runs in a subprocess on the settings compose.yaml gives the web container, so
what the test sees is what production gets.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from django.conf import settings
from django.test import Client

from autocoder.security import CSP_HEADER
from tests.factories import MembershipFactory

ROOT = Path(settings.BASE_DIR)
INTERPOLATION = re.compile(r"\$\{(\w+)(?::?[-?]([^}]*))?\}")


def compose_environment(service: str) -> dict[str, str]:
    """The service's environment as compose sets it with an empty .env (defaults applied)."""
    compose = yaml.safe_load((ROOT / "compose.yaml").read_text())
    given = {"POSTGRES_PASSWORD": "compose-secret"}
    raw = compose["services"][service]["environment"]
    return {name: INTERPOLATION.sub(lambda m: given.get(m[1], m[2] or ""), str(value))
            for name, value in raw.items()}


def production_env() -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items()
            if not k.startswith(("DJANGO_", "DATABASE_", "REDIS_", "LOGIN_"))}
    return {**keep, **compose_environment("web"), "DJANGO_DEBUG": "false",
            "DJANGO_ALLOWED_HOSTS": "autocoder.example.com",
            "DJANGO_SECRET_KEY": "a-production-key-" + "x7Qp!9zR#v2Lm$4Kt8Wb" * 3}


def test_check_deploy_on_compose_settings_reports_nothing() -> None:
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT, env=production_env(), capture_output=True, text=True, timeout=120)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "WARNINGS" not in output and "System check identified no issues" in output


def test_the_production_values_are_documented_in_env_example() -> None:
    text = (ROOT / ".env.example").read_text()
    for name in compose_environment("web"):
        if name.startswith("DJANGO_SECURE") or name.endswith("COOKIE_SECURE"):
            assert re.search(rf"^# {name}=\S", text, flags=re.MULTILINE), name


@pytest.mark.django_db
def test_pages_carry_a_content_security_policy_without_inline_code() -> None:
    membership = MembershipFactory(role="reviewer")
    client = Client()
    client.force_login(membership.user)
    response = client.get(f"/t/{membership.team.slug}/board/")
    assert response.status_code == 200
    policy = dict(part.strip().split(" ", 1) for part in response[CSP_HEADER].split(";"))
    assert policy["script-src"] == "'self'" and policy["style-src"] == "'self'"
    assert policy["connect-src"] == "'self' ws://testserver wss://testserver"
    assert policy["object-src"] == "'none'" and policy["frame-ancestors"] == "'none'"
    html = response.content.decode()
    assert not re.search(r"<script(?![^>]*\bsrc=)", html), "inline <script> is blocked by the CSP"
    assert not re.search(r"\son[a-z]+=", html), "inline event handlers are blocked by the CSP"
    assert not re.search(r"\sstyle=", html), "inline styles are blocked by the CSP"
    assert Client().get("/login/")[CSP_HEADER]


def test_no_template_holds_code_or_styles_the_policy_would_block() -> None:
    """Inline <script>, on...= handlers and style="" are refused by the policy: they belong in
    static/js and static/css."""
    blocked = re.compile(r"<script(?![^>]*\bsrc=)|\son[a-z]+=|\sstyle=|<style")
    found = [f"{path.relative_to(ROOT)}:{number}"
             for path in sorted((ROOT / "templates").rglob("*.html"))
             for number, line in enumerate(path.read_text().splitlines(), 1)
             if blocked.search(line)]
    assert not found, found
