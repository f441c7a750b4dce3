"""Who sees which plugin, checked everywhere a plugin shows: the catalogue search, the plugin
page, the package index, the files, and "try it". Four users per rule, as in healthchecks:
acme's admin (owner team, reviewer rights), acme's requester (owner team), another team's
admin, and a user in no team; plus pip without a token."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from django.core.exceptions import PermissionDenied
from django.test import Client
from django.urls import reverse

from marketplace.models import Artifact, PluginVersion, TryRequest
from marketplace.selectors.catalogue import catalogue_search, clean_params
from marketplace.selectors.visibility import viewer_for
from marketplace.services.listing import plugin_settings_update
from marketplace.services.tokens import api_token_create
from marketplace.services.trying import plugin_try_perform
from tests.marketplace.conftest import client_for, plugin_tree

pytestmark = pytest.mark.django_db

SEES = {
    "admin": {"public-words", "team-words", "private-words"},
    "requester": {"public-words", "team-words"},
    "outsider": {"public-words"},
    "loner": {"public-words"},
}


@pytest.fixture
def three(publish: Any) -> dict[str, PluginVersion]:
    return {vis: publish(plugin_tree(name=f"{vis}-words", summary=f"Counts words ({vis})."),
                         visibility=vis)
            for vis in ("public", "team", "private")}


def token_client(user: Any) -> Client:
    _, raw = api_token_create(user=user, name="pip")
    encoded = base64.b64encode(f"__token__:{raw}".encode()).decode()
    return Client(HTTP_AUTHORIZATION=f"Basic {encoded}")


def test_search_lists_only_what_each_user_may_see(market: dict, three: dict) -> None:
    for role, expected in SEES.items():
        viewer = viewer_for(market[role])
        for params in (clean_params(q="counts words"), clean_params(), clean_params(sort="rating")):
            page = catalogue_search(viewer=viewer, params=params)
            assert {p.name for p in page.results} == expected, (role, params)
            assert page.total == len(expected)
        html = client_for(market[role]).get(reverse("marketplace:catalogue"),
                                            {"q": "words"}).content.decode()
        assert {name for name in SEES["admin"] if f">{name}</a>" in html} == expected, role


def test_plugin_pages_are_404_for_those_who_may_not_see_them(market: dict, three: dict) -> None:
    for role, expected in SEES.items():
        client = client_for(market[role])
        for name in SEES["admin"]:
            status = client.get(reverse("marketplace:plugin", args=[name])).status_code
            version = client.get(reverse("marketplace:version", args=[name, "0.1.0"])).status_code
            wanted = 200 if name in expected else 404
            assert (status, version) == (wanted, wanted), (role, name)
    assert Client().get(reverse("marketplace:plugin", args=["public-words"])).status_code == 302


def test_the_index_answers_404_not_403_to_those_who_may_not_see(market: dict, three: dict) -> None:
    anonymous = Client()
    assert anonymous.get("/simple/public-words/").status_code == 200
    for name in ("team-words", "private-words", "no-such-plugin"):
        assert anonymous.get(f"/simple/{name}/").status_code == 404
    for role, expected in SEES.items():
        client = token_client(market[role])
        listed = {p["name"] for p in client.get(
            "/simple/", HTTP_ACCEPT="application/vnd.pypi.simple.v1+json").json()["projects"]}
        assert listed == expected, role
        for name in SEES["admin"]:
            status = client.get(f"/simple/{name}/").status_code
            assert status == (200 if name in expected else 404), (role, name)


def test_files_follow_the_same_rule(market: dict, three: dict) -> None:
    private_wheel = Artifact.objects.get(version=three["private"], kind="wheel")
    url = reverse("marketplace:file", args=[private_wheel.pk, private_wheel.filename])
    assert Client().get(url).status_code == 404
    assert token_client(market["requester"]).get(url).status_code == 404
    assert token_client(market["outsider"]).get(url).status_code == 404
    assert token_client(market["admin"]).get(url).status_code == 200
    public_wheel = Artifact.objects.get(version=three["public"], kind="wheel")
    assert Client().get(reverse("marketplace:file", args=[
        public_wheel.pk, public_wheel.filename])).status_code == 200


def test_try_it_is_refused_where_the_plugin_is_invisible(market: dict, three: dict,
                                                         clean_redis: Any) -> None:
    data = {"command": "count-words", "payload": '{"text": "a b"}'}
    url = reverse("marketplace:try", args=["private-words", "0.1.0"])
    assert client_for(market["requester"]).post(url, data).status_code == 404
    assert client_for(market["outsider"]).post(url, data).status_code == 404
    admin = client_for(market["admin"])
    response = admin.post(url, data)
    assert response.status_code == 200
    asked = TryRequest.objects.get()
    plugin_try_perform(try_id=asked.pk)  # the worker
    result = admin.get(reverse("marketplace:try_result",
                               args=["private-words", "0.1.0", asked.pk]))
    assert "&quot;words&quot;: 2" in admin.get(result["Location"]).content.decode()
    # Nobody else reaches it, not even through the result's address.
    outsider = client_for(market["outsider"])
    assert outsider.get(result["Location"]).status_code == 404


def test_changing_visibility_takes_effect_everywhere(market: dict, three: dict) -> None:
    plugin = three["private"].plugin
    with pytest.raises(PermissionDenied):
        plugin_settings_update(plugin=plugin, user=market["reviewer"],
                               visibility="public", category="text", tags=[])
    plugin_settings_update(plugin=plugin, user=market["admin"], visibility="public",
                           category="text", tags=["words"])
    assert Client().get("/simple/private-words/").status_code == 200
    page = catalogue_search(viewer=viewer_for(market["loner"]), params=clean_params(tag="words"))
    assert [p.name for p in page.results] == ["private-words"]
