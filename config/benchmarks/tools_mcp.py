"""Throughput of the tools' MCP server under concurrent assistants (`bench_invoke --mode mcp`).

`mcp_seed` puts the API benchmark's echo plugin in use in the team (tools_api.py's `api_seed`)
and makes a token of all of the team's tools, as `manage.py tool_token` does. `mcp_load` then
has `clients` concurrent MCP clients (the official SDK's streamable HTTP client, each its own
session and connection) call the echo tool for `seconds` seconds against a running portal, each
one call at a time, and reports throughput and latency as `--mode api` does.
"""

from __future__ import annotations

import logging
import statistics
import time

import anyio

from config.benchmarks.tools_api import API_PLUGIN_NAME, LoadFigures, Pace, api_seed

ECHO_TOOL = f"{API_PLUGIN_NAME}__echo"
PROTOCOLS = ("legacy", "2026-07-28")  # the initialize handshake, or the per-request one


def mcp_seed(*, team_slug: str, admin_username: str) -> str:
    """A raw token of all the team's tools, the echo tool among them."""
    from django.contrib.auth import get_user_model

    from teams.models import Team
    from tools.services.tokens import tool_token_create

    api_seed(team_slug=team_slug, admin_username=admin_username)
    team = Team.objects.get(slug=team_slug)
    admin = get_user_model().objects.get(username=admin_username)
    _, raw = tool_token_create(team=team, plugin=None, user=admin,  # type: ignore[arg-type]
                               name=f"bench_invoke mcp {time.strftime('%Y-%m-%d %H:%M:%S')}")
    return raw


class McpLoadFigures(LoadFigures):
    protocol: str


def mcp_load(*, url: str, token: str, team_slug: str, clients: int = 20,
             seconds: float = 30.0, protocol: str = "legacy",
             rate: float | None = None) -> McpLoadFigures:
    for noisy in ("httpx", "httpx2", "mcp"):
        logging.getLogger(noisy).setLevel(logging.WARNING)  # not a line per request
    address = f"{url.rstrip('/')}/mcp/{team_slug}/"
    figures: McpLoadFigures = anyio.run(_load, address, token, clients, seconds, protocol,
                                        rate)
    return figures


async def _load(address: str, token: str, clients: int, seconds: float,
                protocol: str, rate: float | None) -> McpLoadFigures:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    latencies: list[float] = []
    failures: list[str] = []
    started = time.monotonic()
    deadline = started + seconds
    pace = Pace(clients, rate, started)

    async def one_client(number: int) -> None:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"},
                                  timeout=httpx2.Timeout(60.0))
        try:
            async with Client(streamable_http_client(address, http_client=http),
                              mode=protocol) as assistant:
                sent = 0
                while time.monotonic() < deadline:
                    sent += 1
                    await pace.wait(number, sent)
                    if time.monotonic() >= deadline:
                        break
                    began = time.monotonic()
                    result = await assistant.call_tool(ECHO_TOOL, {"client": number, "n": sent})
                    if result.is_error:
                        failures.append(str(result.content[0])[:200] if result.content else "")
                    else:
                        latencies.append((time.monotonic() - began) * 1000)
        except Exception as error:  # a failed session counts, and the others go on
            failures.append(f"{type(error).__name__}: {error}"[:200])

    async with anyio.create_task_group() as group:
        for number in range(clients):
            group.start_soon(one_client, number)
    elapsed = time.monotonic() - started
    return {"mode": "mcp", "rate": rate, "protocol": protocol, "clients": clients,
            "seconds": round(elapsed, 1), "requests": len(latencies),
            "throughput_rps": round(len(latencies) / elapsed, 1),
            "p50_ms": round(statistics.median(latencies), 1) if latencies else None,
            "p95_ms": round(_p95(latencies), 1) if latencies else None,
            "errors": len(failures), "error_samples": failures[:5]}


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
