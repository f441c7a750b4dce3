"""The package index as pip and other tools read it: PEP 503 HTML, PEP 691 JSON by Accept,
PEP 592 yanks, PEP 700 fields, name normalisation, tokens, and the files with their hashes."""

from __future__ import annotations

import base64
import hashlib
import re
from typing import Any

import pytest
from django.test import Client

from marketplace.models import Artifact, Plugin, PluginVersion
from marketplace.services.tokens import api_token_create, api_token_revoke
from marketplace.services.yanking import plugin_version_yank
from marketplace.views.index import negotiate
from tests.marketplace.conftest import plugin_tree

pytestmark = pytest.mark.django_db

JSON = "application/vnd.pypi.simple.v1+json"
PIP_ACCEPT = ("application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html; q=0.1,"
              " text/html; q=0.01")


@pytest.fixture
def two_versions(market: dict, publish: Any) -> dict[str, PluginVersion]:
    first = publish(plugin_tree(version="0.1.0"), visibility="public")
    second = publish(plugin_tree(version="0.2.0"), visibility="public")
    plugin_version_yank(version=second, user=market["reviewer"],
                        reason='broke "quotes" <and> tags')
    return {"0.1.0": first, "0.2.0": second}


def basic(token: str) -> str:
    return "Basic " + base64.b64encode(f"__token__:{token}".encode()).decode()


def test_html_project_page_follows_pep_503_and_592(two_versions: dict) -> None:
    response = Client().get("/simple/word-count/")
    assert response.status_code == 200
    assert response["Content-Type"] == "text/html; charset=utf-8"
    html = response.content.decode()
    assert '<meta name="pypi:repository-version" content="1.1">' in html
    links = re.findall(r"<a ([^>]*)>([^<]*)</a>", html)
    assert [text for _, text in links] == ["word_count-0.1.0-py3-none-any.whl",
                                           "word_count-0.1.0.tar.gz",
                                           "word_count-0.2.0-py3-none-any.whl",
                                           "word_count-0.2.0.tar.gz"]
    for attributes, filename in links:
        artifact = Artifact.objects.get(filename=filename)
        href = re.search(r'href="([^"]*)"', attributes).group(1)
        assert href.endswith(f"/{filename}#sha256={artifact.sha256}")
        assert 'data-requires-python="&gt;=3.11"' in attributes
        yanked = filename.startswith("word_count-0.2.0")
        assert ('data-yanked="broke &quot;quotes&quot; &lt;and&gt; tags"' in attributes) == yanked


def test_json_project_page_follows_pep_691_and_700(two_versions: dict) -> None:
    response = Client().get("/simple/word-count/", HTTP_ACCEPT=PIP_ACCEPT)
    assert response.status_code == 200 and response["Content-Type"] == JSON
    assert "Accept" in response["Vary"]
    data = response.json()
    assert data["meta"] == {"api-version": "1.1"}
    assert data["name"] == "word-count" and data["versions"] == ["0.1.0", "0.2.0"]
    by_name = {f["filename"]: f for f in data["files"]}
    wheel = by_name["word_count-0.1.0-py3-none-any.whl"]
    artifact = Artifact.objects.get(filename=wheel["filename"])
    assert wheel["hashes"] == {"sha256": artifact.sha256} and wheel["size"] == artifact.size
    assert wheel["requires-python"] == ">=3.11" and wheel["yanked"] is False
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", wheel["upload-time"])
    assert by_name["word_count-0.2.0.tar.gz"]["yanked"] == 'broke "quotes" <and> tags'
    served = Client().get(wheel["url"])
    assert served.status_code == 200
    assert hashlib.sha256(b"".join(served.streaming_content)).hexdigest() == artifact.sha256


def test_project_list_in_both_formats(two_versions: dict) -> None:
    html = Client().get("/simple/").content.decode()
    assert '<a href="/simple/word-count/">word-count</a>' in html
    data = Client().get("/simple/", HTTP_ACCEPT=JSON).json()
    assert data == {"meta": {"api-version": "1.1"}, "projects": [{"name": "word-count"}]}


def test_content_negotiation() -> None:
    assert negotiate("") == "text/html"
    assert negotiate(PIP_ACCEPT) == JSON
    assert negotiate("application/vnd.pypi.simple.latest+json") == JSON
    assert negotiate("application/vnd.pypi.simple.v1+html") == "application/vnd.pypi.simple.v1+html"
    assert negotiate(f"{JSON}; q=0.2, text/html; q=0.9") == "text/html"
    assert negotiate(f"{JSON}; q=0, text/html") == "text/html"
    assert negotiate("*/*") == "text/html"
    assert negotiate("application/vnd.pypi.simple.v2+json, image/png") is None


def test_unsupported_formats_get_406_and_format_parameter_wins(two_versions: dict) -> None:
    client = Client()
    assert client.get("/simple/", HTTP_ACCEPT="application/xml").status_code == 406
    forced = client.get("/simple/word-count/?format=json", HTTP_ACCEPT="text/html")
    assert forced["Content-Type"] == JSON


def test_names_are_redirected_to_their_normalized_form(two_versions: dict) -> None:
    response = Client().get("/simple/Word_Count/")
    assert response.status_code == 301 and response["Location"] == "/simple/word-count/"


def test_a_wrong_or_revoked_token_is_401_and_a_good_one_works(market: dict,
                                                              two_versions: dict) -> None:
    client = Client()
    wrong = client.get("/simple/word-count/", HTTP_AUTHORIZATION=basic("acpi_nope"))
    assert wrong.status_code == 401 and wrong["WWW-Authenticate"].startswith("Basic")
    token, raw = api_token_create(user=market["loner"], name="laptop")
    assert client.get("/simple/word-count/", HTTP_AUTHORIZATION=basic(raw)).status_code == 200
    token.refresh_from_db()
    assert token.last_used_at is not None
    api_token_revoke(user=market["loner"], token_id=token.pk)
    assert client.get("/simple/word-count/", HTTP_AUTHORIZATION=basic(raw)).status_code == 401
    assert client.get("/simple/", HTTP_AUTHORIZATION="Bearer x").status_code == 401


def test_only_a_hash_of_the_token_is_stored(market: dict) -> None:
    token, raw = api_token_create(user=market["loner"], name="ci")
    assert raw.startswith("acpi_") and len(raw) > 40
    assert raw not in str(token.__dict__)
    assert token.token_hash == hashlib.sha256(raw.encode()).hexdigest()


def test_downloads_count_as_installs(two_versions: dict) -> None:
    wheel = Artifact.objects.get(filename="word_count-0.1.0-py3-none-any.whl")
    for _ in range(3):
        response = Client().get(f"/marketplace/files/{wheel.pk}/{wheel.filename}")
        b"".join(response.streaming_content)
    wheel.refresh_from_db()
    assert wheel.download_count == 3 and Plugin.objects.get().install_count == 3
    assert Client().get(f"/marketplace/files/{wheel.pk}/other.whl").status_code == 404


def test_a_pending_version_is_not_in_the_index(market: dict, submit: Any,
                                               two_versions: dict) -> None:
    submit(plugin_tree(version="0.3.0"), visibility="public")
    data = Client().get("/simple/word-count/", HTTP_ACCEPT=JSON).json()
    assert data["versions"] == ["0.1.0", "0.2.0"]
