"""Prometheus /metrics: refused to everyone without the token unless loopback scrapes are
switched on explicitly (behind a reverse proxy on the same host every request is local); values
of other processes (a live ASGI server, a command) are added up; queue depth is read from
Redis."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from django.conf import settings
from django.test import Client, override_settings

from autocoder.tasks import team_event_publish
from tests.foundation.test_security_settings import compose_environment
from tests.live import LiveServer, live_asgi_server
from tests.projects.test_live import open_socket

TOKEN = "scrape-" + "k" * 30


def sample(text: str, name: str, **labels: str) -> float | None:
    """The value of metric `name` with exactly `labels` in a Prometheus text exposition."""
    wanted = ",".join(f'{key}="{value}"' for key, value in sorted(labels.items()))
    for line in text.splitlines():
        found = re.fullmatch(rf"{re.escape(name)}(?:\{{(.*)\}})? (\S+)", line)
        if found and ",".join(sorted((found[1] or "").split(","))) == wanted:
            return float(found[2])
    return None


def scraped() -> str:
    """What a scraper with the token reads (the setting is this test's: by default /metrics
    answers nobody)."""
    with override_settings(METRICS_TOKEN=TOKEN):
        answer = Client().get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert answer.status_code == 200, answer.content
    return answer.content.decode()


def test_by_default_nobody_may_scrape_not_even_this_machine() -> None:
    """The defaults (the test settings set neither METRICS_TOKEN nor METRICS_ALLOW_LOOPBACK)."""
    answer = Client().get("/metrics")  # the test client is 127.0.0.1
    assert answer.status_code == 401
    assert (settings.METRICS_TOKEN, settings.METRICS_ALLOW_LOOPBACK) == ("", False)
    assert answer["WWW-Authenticate"].startswith("Bearer")
    assert "METRICS_TOKEN" in answer.content.decode()


@pytest.mark.django_db(transaction=True)
def test_a_reverse_proxy_on_the_same_host_does_not_open_it(
        clean_redis: object, monkeypatch: pytest.MonkeyPatch) -> None:
    """A live server on 127.0.0.1, asked as a proxy on this host asks for anyone outside."""
    for name in ("METRICS_TOKEN", "METRICS_ALLOW_LOOPBACK", "METRICS_FROM_LOOPBACK"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("METRICS_FROM_LOOPBACK", "true")  # an old .env's line: not read any more
    with live_asgi_server() as server:
        answer = httpx.get(f"{server.url}metrics", timeout=10,
                           headers={"X-Forwarded-For": "203.0.113.7"})
    assert answer.status_code == 401
    assert "autocoder_" not in answer.text


def test_compose_turns_the_loopback_allowance_off_and_the_settings_are_documented() -> None:
    assert compose_environment("web")["METRICS_ALLOW_LOOPBACK"] == "false"
    example = (settings.BASE_DIR / ".env.example").read_text()
    for name in ("METRICS_TOKEN", "METRICS_ALLOW_LOOPBACK", "METRICS_DIR"):
        assert re.search(rf"^#? ?{name}=", example, flags=re.MULTILINE), name
    assert re.search(r"^METRICS_ALLOW_LOOPBACK=false$", example, flags=re.MULTILINE)
    assert "METRICS_FROM_LOOPBACK=" not in example


@override_settings(METRICS_TOKEN=TOKEN)
def test_a_token_does_not_open_it_to_this_machine_without_the_token() -> None:
    assert Client().get("/metrics").status_code == 401


@override_settings(METRICS_TOKEN=TOKEN, METRICS_ALLOW_LOOPBACK=False)
def test_the_token_opens_it_and_a_wrong_one_does_not() -> None:
    client = Client()
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 403
    answer = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert answer.status_code == 200
    assert answer["Content-Type"].startswith("text/plain")
    assert sample(answer.content.decode(), "autocoder_broker_up") == 1.0


@pytest.mark.parametrize("token", ["", TOKEN])
def test_this_machine_may_scrape_without_a_token_when_switched_on_others_may_not(
        token: str) -> None:
    with override_settings(METRICS_TOKEN=token, METRICS_ALLOW_LOOPBACK=True):
        assert Client().get("/metrics").status_code == 200  # the test client is 127.0.0.1
        assert Client(REMOTE_ADDR="10.1.2.3").get("/metrics").status_code == 401


@pytest.mark.usefixtures("clean_redis")
def test_queue_depth_is_counted_per_actor() -> None:
    for _ in range(3):
        team_event_publish.send(0, "nothing", {})
    team_event_publish.send_with_options(args=(0, "later", {}), delay=60_000)
    text = scraped()
    assert sample(text, "autocoder_queue_messages", queue="default",
                  actor="team_event_publish", state="waiting") == 3.0
    assert sample(text, "autocoder_queue_messages", queue="default",
                  actor="team_event_publish", state="delayed") == 1.0


def test_model_calls_of_another_process_are_added_up() -> None:
    """A command in its own process makes a model call; the web process's scrape shows it."""
    before = _llm_calls(scraped())
    script = ("from autocoder.llm.scripted import ScriptedProvider\n"
              "from autocoder.llm.types import Message\n"
              "provider = ScriptedProvider({'architect': ['hello']})\n"
              "provider.complete([Message('user', 'hi')], role='architect')\n")
    done = subprocess.run([sys.executable, "manage.py", "shell", "-c", script],
                          cwd=settings.BASE_DIR, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert _llm_calls(scraped()) == before + 1


def _llm_calls(text: str) -> float:
    return sample(text, "autocoder_llm_call_seconds_count", provider="scripted",
                  role="architect") or 0.0


@pytest.fixture
def server(clean_redis: object, monkeypatch: pytest.MonkeyPatch) -> Iterator[LiveServer]:
    monkeypatch.setenv("METRICS_TOKEN", TOKEN)  # the live server's scraper has the token
    with live_asgi_server() as live:
        yield live


@pytest.mark.django_db(transaction=True)
def test_open_websockets_of_the_web_server_are_counted(server: LiveServer,
                                                       team_with_roles: dict) -> None:
    def open_now() -> float | None:
        text = httpx.get(f"{server.url}metrics", timeout=10,
                         headers={"Authorization": f"Bearer {TOKEN}"}).text
        return sample(text, "autocoder_websocket_connections", kind="team")

    with open_socket(server, "ws/teams/acme/", team_with_roles["member"]):
        assert _soon(lambda: open_now() == 1.0)
    assert _soon(lambda: open_now() == 0.0)


def _soon(condition: object, timeout_s: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.1)
    return False


def test_sandbox_starts_are_counted_with_their_latency() -> None:
    from autocoder.sandbox import run

    def started(text: str) -> float:
        return sample(text, "autocoder_sandbox_starts_total", backend="bwrap") or 0.0

    before = started(scraped())
    result = run({"job.py": "print('hi')\n"}, ["python", "job.py"], backend="bwrap")
    text = scraped()
    assert result.exit_code == 0, result.stderr
    assert started(text) == before + 1
    assert (sample(text, "autocoder_sandbox_start_seconds_count", backend="bwrap") or 0) >= 1


def test_a_new_stack_forgets_the_processes_that_are_gone_but_not_the_living(
        tmp_path: Path) -> None:
    from autocoder.metrics import forget_processes, process_identifier

    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    dead = tmp_path / f"counter_{process_identifier(gone.pid)}.db"
    living = tmp_path / f"gauge_livesum_{process_identifier()}.db"
    elsewhere = tmp_path / "counter_another-host-1.db"
    for path in (dead, living, elsewhere):
        path.write_bytes(b"")
    forget_processes(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([living.name, elsewhere.name])
