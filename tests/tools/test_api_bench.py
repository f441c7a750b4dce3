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


def test_a_paced_load_starts_the_calls_asked_for_and_no_more(server: LiveServer) -> None:
    """`--rate`: 3 clients together starting 10 calls a second for 2 s start about 20 calls,
    where the saturated load above starts as many as the portal answers."""
    team = TeamFactory(slug="paced")
    admin = UserFactory(username="paced-admin")
    MembershipFactory(team=team, user=admin, role="admin")
    plugin, token = api_seed(team_slug="paced", admin_username="paced-admin")

    figures = api_load(url=server.url, token=token, team_slug="paced", plugin=plugin,
                       clients=3, seconds=2.0, rate=10.0)

    assert figures["errors"] == 0, figures["error_samples"]
    assert figures["rate"] == 10.0
    # due at 0, 0.1, ... 1.9 s: at most 20 start before the deadline; a slow call may delay
    # a client's later ones, never add any
    assert 10 <= figures["requests"] <= 20, figures
