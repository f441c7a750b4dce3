"""`bench_invoke --mode api`: the echo tool is published, activated and given a token through
the portal's own services, and concurrent clients call it over HTTP on a live ASGI server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from config.benchmarks.tools_api import API_PLUGIN_NAME, api_load, api_seed
from tests.factories import MembershipFactory, TeamFactory, UserFactory
from tests.live import LiveServer, live_asgi_server
from tools.models import Activation

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def server(clean_redis: object) -> Iterator[LiveServer]:
    with live_asgi_server() as live:
        yield live


def test_the_api_bench_sets_up_its_tool_once_and_measures_real_calls(
        server: LiveServer) -> None:
    team = TeamFactory(slug="bench")
    admin = UserFactory(username="bench-admin")
    MembershipFactory(team=team, user=admin, role="admin")

    plugin, token = api_seed(team_slug="bench", admin_username="bench-admin")
    again, other_token = api_seed(team_slug="bench", admin_username="bench-admin")
    figures = api_load(url=server.url, token=token, team_slug="bench", plugin=plugin,
                       clients=2, seconds=2.0)

    assert (plugin, again) == (API_PLUGIN_NAME, API_PLUGIN_NAME) and token != other_token
    assert Activation.objects.filter(team=team, status=Activation.Status.ACTIVE).count() == 1
    assert figures["errors"] == 0, figures["error_samples"]
    assert figures["requests"] >= 2 and figures["p95_ms"] >= figures["p50_ms"] > 0
