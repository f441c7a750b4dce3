"""/healthz and `doctor` against the real database, Redis and a real Dramatiq worker."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import dramatiq
import pytest
from django.core.management import call_command
from django.test import Client

from autocoder.heartbeat import live_workers
from config.testing.workers import in_process_worker


@pytest.fixture
def running_worker(clean_redis: object) -> Iterator[dramatiq.Worker]:
    with in_process_worker(threads=1) as worker:
        deadline = time.monotonic() + 10
        while not live_workers() and time.monotonic() < deadline:
            time.sleep(0.05)
        yield worker


@pytest.mark.django_db
def test_healthz_is_503_and_names_the_missing_worker(clean_redis: object) -> None:
    response = Client().get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "unhealthy"
    assert body["checks"]["workers"]["ok"] is False
    assert "rundramatiq" in body["checks"]["workers"]["hint"]
    assert body["checks"]["database"]["ok"] and body["checks"]["redis"]["ok"]
    assert body["checks"]["pgvector"]["ok"]


@pytest.mark.django_db(transaction=True)
def test_healthz_is_200_while_a_worker_beats_and_503_after_it_stops(
    running_worker: dramatiq.Worker,
) -> None:
    response = Client().get("/healthz")
    assert response.status_code == 200, response.content
    assert response.json()["checks"]["workers"]["detail"] == "1 worker process(es) alive"
    running_worker.stop()
    assert Client().get("/healthz").status_code == 503


@pytest.mark.django_db
def test_healthz_is_503_when_redis_is_unreachable(settings: object, clean_redis: object) -> None:
    settings.REDIS_URL = "unix:///nonexistent/redis.sock"
    body = Client().get("/healthz").json()
    assert body["checks"]["redis"]["ok"] is False
    assert "REDIS_URL" in body["checks"]["redis"]["hint"]


@pytest.mark.django_db(transaction=True)
def test_doctor_reports_every_part(running_worker: dramatiq.Worker, settings: Any,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    # A fresh installation has no model (tests/llm/test_readiness.py); here a recorded script.
    settings.LLM_PROVIDER = "scripted"
    settings.LLM_SCRIPT = str(settings.BASE_DIR / "tests" / "engine" / "scripts" / "success.json")
    call_command("doctor", "--json")
    report = json.loads(capsys.readouterr().out)
    assert set(report) == {"database", "pgvector", "redis", "workers", "sandbox", "embedder", "llm",
                           "secrets"}
    for part in ("database", "pgvector", "redis", "workers", "embedder", "llm", "secrets"):
        assert report[part]["ok"], report[part]


@pytest.mark.django_db
def test_doctor_exits_non_zero_and_says_what_to_do(clean_redis: object,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        call_command("doctor")
    assert exit_info.value.code == 1
    out = capsys.readouterr().out
    assert "FAIL workers" in out and "-> start workers" in out
