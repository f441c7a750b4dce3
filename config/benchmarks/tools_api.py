"""Throughput of the tools' HTTP API under concurrent clients (`bench_invoke --mode api`).

`api_seed` makes, in the database this command uses, what an API client needs: a small echo
plugin published in a team (through the same checks as an upload), activated by one of the
team's admins, and a fresh API token. `api_load` then has `clients` concurrent clients POST
the echo command to `POST /api/tools/<team>/<plugin>/echo` for `seconds` seconds against a
running portal (`make run`), each one request at a time, and reports throughput and latency.

Two loads: saturated (each client sends its next call as soon as the last is answered: the
most the portal answers, and a median that is then clients / throughput, Little's law), or
paced with `rate` (the clients together start `rate` calls per second, each client at
clients / rate intervals, a late one at once: the median at that rate, as a team's assistants
and scripts call).
"""

from __future__ import annotations

import asyncio
import logging
import statistics
import tempfile
import time
from pathlib import Path
from typing import TypedDict

import httpx

API_PLUGIN_NAME = "bench-api-echo"
API_PLUGIN_FILES = {
    "plugin.toml": '''[plugin]
name = "bench-api-echo"
version = "1.0.0"
summary = "Echoes its payload (the tools API benchmark)."
entry = "bench_api_echo.plugin:Plugin"

[permissions]
network = false
filesystem = "none"

[[commands]]
name = "echo"
description = "Answers with the payload it was given."
examples = [{input = {text = "hello"}, output = {echo = {text = "hello"}}}]
''',
    "bench_api_echo/__init__.py": "",
    "bench_api_echo/plugin.py": '''class Plugin:
    def on_command(self, name: str, payload: dict) -> dict:
        if name != "echo":
            raise ValueError(f"unknown command {name!r}")
        return {"echo": payload}
''',
    "tests/test_echo.py": '''from bench_api_echo.plugin import Plugin


def test_echo_answers_with_the_payload():
    assert Plugin().on_command("echo", {"text": "hello"}) == {"echo": {"text": "hello"}}
''',
    "README.md": "# bench-api-echo\n\nEchoes its payload; used by `bench_invoke --mode api`.\n",
}


def api_seed(*, team_slug: str, admin_username: str) -> tuple[str, str]:
    """(plugin name, raw API token): the echo plugin published and in use in the team."""
    from django.contrib.auth import get_user_model

    from marketplace.models import PluginVersion
    from marketplace.services.publishing import plugin_directory_publish
    from teams.models import Team
    from tools.selectors import active_activation
    from tools.services.activations import activation_decide, activation_request
    from tools.services.tokens import tool_token_create

    team = Team.objects.get(slug=team_slug)
    admin = get_user_model().objects.get(username=admin_username)
    version = (PluginVersion.objects.filter(plugin__team=team, plugin__name=API_PLUGIN_NAME,
                                            status=PluginVersion.Status.PUBLISHED)
               .select_related("plugin").first())
    if version is None:
        with tempfile.TemporaryDirectory() as scratch:
            for name, text in API_PLUGIN_FILES.items():
                (Path(scratch) / name).parent.mkdir(parents=True, exist_ok=True)
                (Path(scratch) / name).write_text(text)
            version = plugin_directory_publish(directory=Path(scratch), team=team,
                                               approver=admin)
    if active_activation(team, version.plugin) is None:
        asked = activation_request(team=team, version=version, user=admin, notify=False)
        activation_decide(activation=asked, user=admin, approve=True)
    _, raw = tool_token_create(team=team, plugin=version.plugin, user=admin,
                               name=f"bench_invoke {time.strftime('%Y-%m-%d %H:%M:%S')}")
    return version.plugin.name, raw


class LoadFigures(TypedDict):
    """What a load of the tools' API (or MCP) prints: calls, their rate and latencies.
    `rate`: the calls per second asked for (None: saturated)."""

    mode: str
    rate: float | None
    clients: int
    seconds: float
    requests: int
    throughput_rps: float
    p50_ms: float | None
    p95_ms: float | None
    errors: int
    error_samples: list[str]


class Pace:
    """When each client starts its calls: at once (rate None), or every clients / rate
    seconds from its own offset, so that the clients together start `rate` calls a second."""

    def __init__(self, clients: int, rate: float | None, started: float) -> None:
        self.interval = clients / rate if rate else 0.0
        self.clients, self.started = clients, started

    async def wait(self, client: int, sent: int) -> None:
        """Until client `client`'s call number `sent` (from 1) is due."""
        if not self.interval:
            return
        due = (self.started + self.interval * (sent - 1)
               + self.interval * client / self.clients)
        delay = due - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)


def api_load(*, url: str, token: str, team_slug: str, plugin: str, clients: int = 20,
             seconds: float = 30.0, rate: float | None = None) -> LoadFigures:
    logging.getLogger("httpx").setLevel(logging.WARNING)  # not a line per request
    return asyncio.run(_load(url, token, f"/api/tools/{team_slug}/{plugin}/echo", clients,
                             seconds, rate))


async def _load(url: str, token: str, path: str, clients: int,
                seconds: float, rate: float | None) -> LoadFigures:
    latencies: list[float] = []
    failures: list[str] = []
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=url, headers=headers, limits=limits,
                                 timeout=60.0) as client:
        started = time.monotonic()
        deadline = started + seconds
        pace = Pace(clients, rate, started)

        async def one_client(number: int) -> None:
            sent = 0
            while time.monotonic() < deadline:
                sent += 1
                await pace.wait(number, sent)
                if time.monotonic() >= deadline:
                    break
                began = time.monotonic()
                try:
                    answer = await client.post(path, json={"client": number, "n": sent})
                except httpx.HTTPError as error:
                    failures.append(f"{type(error).__name__}: {error}")
                    continue
                if answer.status_code == 200 and answer.json().get("ok"):
                    latencies.append((time.monotonic() - began) * 1000)
                else:
                    failures.append(f"{answer.status_code}: {answer.text[:200]}")

        await asyncio.gather(*(one_client(n) for n in range(clients)))
        elapsed = time.monotonic() - started
    return {"mode": "api", "rate": rate, "clients": clients, "seconds": round(elapsed, 1),
            "requests": len(latencies), "throughput_rps": round(len(latencies) / elapsed, 1),
            "p50_ms": round(statistics.median(latencies), 1) if latencies else None,
            "p95_ms": round(_p95(latencies), 1) if latencies else None,
            "errors": len(failures), "error_samples": failures[:5]}


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
