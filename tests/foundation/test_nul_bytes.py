"""NUL bytes are refused with 400 (addresses, query strings, forms) and by `generate` with exit
2, instead of reaching PostgreSQL (which cannot store them) and ending in a 500 or a traceback."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.test import Client, RequestFactory

from autocoder.middleware import nul_location
from projects.models import Interview

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"


def member_client(team_with_roles: dict[str, Any]) -> Client:
    client = Client()
    client.force_login(team_with_roles["member"])
    return client


def assert_refused(response: Any, where: str) -> None:
    assert response.status_code == 400
    assert response["Content-Type"].startswith("text/plain")
    text = response.content.decode()
    assert f"the {where} contains a NUL character" in text and "\x00" not in text


@pytest.mark.django_db
def test_the_package_index_refuses_a_nul_in_the_address_anonymously() -> None:
    assert_refused(Client().get("/simple/a%00b/"), "address")


def test_a_plugin_page_refuses_a_nul_in_its_name(team_with_roles: dict[str, Any]) -> None:
    assert_refused(member_client(team_with_roles).get("/marketplace/p/a%00b/"), "address")


@pytest.mark.parametrize("url", ["/t/acme/board/?q=a%00b", "/marketplace/?tag=a%00b",
                                 "/marketplace/?q=x&a%00=1"],
                         ids=["board search", "catalogue tag", "a NUL in a parameter name"])
def test_searches_refuse_a_nul_in_the_query_string(team_with_roles: dict[str, Any],
                                                   url: str) -> None:
    assert_refused(member_client(team_with_roles).get(url), "query string")


def test_the_same_pages_answer_without_a_nul(team_with_roles: dict[str, Any]) -> None:
    client = member_client(team_with_roles)
    for url in ["/t/acme/board/?q=ab", "/marketplace/?tag=ab", "/marketplace/p/ab/"]:
        assert client.get(url).status_code in (200, 404), url


def test_the_wizard_refuses_a_nul_in_posted_text(team_with_roles: dict[str, Any]) -> None:
    response = member_client(team_with_roles).post(
        "/t/acme/new/", {"request": "Plan my week\x00 please, every Monday."})
    assert_refused(response, "form")
    assert not Interview.objects.exists()


def test_uploaded_files_may_hold_nul_bytes_but_form_fields_may_not() -> None:
    factory = RequestFactory()
    wheel = SimpleUploadedFile("plugin.zip", b"PK\x03\x04\x00\x00binary")
    upload = factory.post("/marketplace/upload/", {"file": wheel, "summary": "fine"})
    assert nul_location(upload) == ""
    wheel.seek(0)
    bad = factory.post("/marketplace/upload/", {"file": wheel, "summary": "bad\x00"})
    assert nul_location(bad) == "form"


def test_generate_exits_2_naming_the_field(tmp_path: Path) -> None:
    spec = json.loads((EXAMPLES / "weekly-scheduler.spec.json").read_text())
    spec["summary"] += "\x00"
    spec["commands"][0]["examples"][0]["input"]["days"][0] = "mon\x00"
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    err = io.StringIO()
    with pytest.raises(SystemExit) as exited:
        call_command("generate", str(path), "--json", stdout=io.StringIO(), stderr=err)
    assert exited.value.code == 2
    lines = err.getvalue().splitlines()
    assert f"{path}: summary: contains a NUL character (\\u0000), which cannot be stored" in lines
    assert any("commands[0].examples[0].input.days[0]: contains a NUL" in line for line in lines)
