"""`bench_invoke --mode mcp`, the real command in a subprocess against a live ASGI server: the
echo tool is set up through the portal's services, concurrent SDK clients call it over MCP,
and the figures are printed (both protocols)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator

import pytest
from django.conf import settings

from tests.factories import MembershipFactory, TeamFactory, UserFactory
from tests.live import LiveServer, child_env, live_asgi_server
from tools.models import Invocation, ToolToken

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def server(clean_redis: object) -> Iterator[LiveServer]:
    with live_asgi_server() as live:
        yield live


def bench(server: LiveServer, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", "bench_invoke", "--mode", "mcp", "--url", server.url,
         "--team", "bench", "--admin", "bench-admin", "--clients", "3", "--seconds", "3",
         *extra], cwd=settings.BASE_DIR, env=child_env(), capture_output=True, text=True,
        timeout=300)


def test_the_mcp_bench_measures_real_calls_over_both_protocols(server: LiveServer) -> None:
    team = TeamFactory(slug="bench")
    admin = UserFactory(username="bench-admin")
    MembershipFactory(team=team, user=admin, role="admin")

    done = bench(server, "--json")
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout)
    assert figures["errors"] == 0, figures["error_samples"]
    assert figures["protocol"] == "legacy" and figures["clients"] == 3
    assert figures["requests"] >= 3 and figures["p95_ms"] >= figures["p50_ms"] > 0
    assert Invocation.objects.filter(caller="mcp", status="ok").count() == figures["requests"]

    said = bench(server, "--protocol", "2026-07-28")
    assert said.returncode == 0, said.stderr
    assert said.stdout.startswith("tools MCP (2026-07-28), 3 clients for ")
    assert "calls/s, p50 " in said.stdout and said.stdout.rstrip().endswith("errors 0")
    assert ToolToken.objects.filter(team=team, plugin__isnull=True).count() == 2

    paced = bench(server, "--rate", "5", "--json")
    assert paced.returncode == 0, paced.stderr
    figures = json.loads(paced.stdout)
    assert figures["rate"] == 5.0 and figures["errors"] == 0, figures
    assert 5 <= figures["requests"] <= 15, figures  # due every 0.6 s per client, for 3 s
    refused = bench(server, "--rate", "0")
    assert refused.returncode != 0 and "--rate must be above 0" in refused.stderr
