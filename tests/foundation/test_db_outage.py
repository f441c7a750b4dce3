"""A database that does not answer: pages say so with a 503 within seconds, /healthz names the
database at once, and the site is back within seconds of PostgreSQL's restart.

The slow test stops the real PostgreSQL of a real stack (`manage.py up` on embedded servers of
its own, with its web processes and a worker) and times what a browser and a monitor meet.
The others check the pieces in this process: which errors mean an outage, the 503 answers,
/healthz against a server that is not there, the circuit.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from django.db import OperationalError, connection
from django.http import HttpRequest, HttpResponse
from django.test import Client, RequestFactory
from psycopg_pool import PoolTimeout

from autocoder.database import outage
from autocoder.database.unavailable import server_error
from config.benchmarks.db_outage import (
    BOARD,
    PAGE_TIMEOUT_S,
    UpStack,
    ask,
    free_port,
    logged_in,
)

# What the issue asks for, with room for a busy 2-core machine (measured: well under these).
PAGE_503_WITHIN_S = 3.5
HEALTHZ_WITHIN_S = 2.5
BACK_WITHIN_S = 8.0


def wrapped(error: Exception) -> OperationalError:
    """The error a view meets: Django's, raised from psycopg's (as Django's wrapper does)."""
    try:
        raise OperationalError(str(error)) from error
    except OperationalError as django_error:
        return django_error


@pytest.mark.parametrize(("error", "is_outage"), [
    (PoolTimeout("couldn't get a connection after 2.00 sec"), True),
    (psycopg.OperationalError("connection failed: No such file or directory"), True),
    (psycopg.errors.AdminShutdown("terminating connection due to administrator command"), True),
    (psycopg.errors.CannotConnectNow("the database system is starting up"), True),
    (outage.DatabaseUnavailable("not answering"), True),
    (psycopg.errors.QueryCanceled("canceling statement due to statement timeout"), False),
    (psycopg.errors.DeadlockDetected("deadlock detected"), False),
    (psycopg.errors.UniqueViolation("duplicate key"), False),
    (ValueError("not a database error"), False),
])
def test_which_errors_mean_the_database_is_not_answering(error: Exception,
                                                         is_outage: bool) -> None:
    assert outage.is_outage(error) is is_outage
    assert outage.is_outage(wrapped(error)) is is_outage


def answer_to(error: Exception, path: str = "/t/demo/board/", **headers: str) -> HttpResponse:
    """What Django's handler500 (config/urls.py) answers for a page that raised `error`."""
    request: HttpRequest = RequestFactory().get(path, headers=headers)
    try:
        raise error
    except Exception:
        return server_error(request)


@pytest.fixture
def no_circuits() -> Iterator[None]:
    outage.circuits_reset()
    yield
    outage.circuits_reset()


def test_a_page_that_meets_an_outage_answers_503_in_plain_words(no_circuits: None) -> None:
    response = answer_to(wrapped(outage.DatabaseUnavailable("not answering")))
    assert response.status_code == 503
    assert response["Retry-After"] == "30" and "no-store" in response["Cache-Control"]
    page = response.content.decode()
    assert "<title>Try again in a minute" in page and "</html>" in page
    assert "The database is not answering; try again in a minute." in page


def test_an_htmx_button_gets_the_message_at_the_top_of_its_page(no_circuits: None) -> None:
    response = answer_to(wrapped(outage.DatabaseUnavailable("x")), **{"HX-Request": "true"})
    assert response.status_code == 503
    assert response["HX-Retarget"] == "#main" and response["HX-Reswap"] == "afterbegin"
    fragment = response.content.decode()
    assert 'id="database-unavailable"' in fragment and "<html" not in fragment


@pytest.mark.parametrize(("path", "accept"), [("/api/tools/demo/csv/convert", "*/*"),
                                              ("/t/demo/board/", "application/json")])
def test_the_api_and_json_clients_get_json(path: str, accept: str, no_circuits: None) -> None:
    response = answer_to(wrapped(PoolTimeout("after 2 s")), path, Accept=accept)
    assert response.status_code == 503 and response["Content-Type"] == "application/json"
    assert json.loads(response.content) == {
        "ok": False, "error": "The database is not answering; try again in a minute."}


def test_any_other_error_is_still_the_500_page() -> None:
    response = answer_to(wrapped(psycopg.errors.DeadlockDetected("deadlock detected")))
    assert response.status_code == 500
    assert "Something went wrong on our side" in response.content.decode()


@pytest.fixture
def database_elsewhere(no_circuits: None, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """This process's connection settings pointing at a socket where no server listens."""
    settings_dict = connection.settings_dict
    saved = dict(settings_dict)
    settings_dict["HOST"] = str(tmp_path)
    try:
        yield settings_dict
    finally:
        settings_dict.clear()
        settings_dict.update(saved)


@pytest.mark.django_db
def test_healthz_names_the_database_at_once_when_it_is_not_there(
        database_elsewhere: dict[str, Any], clean_redis: object) -> None:
    started = time.monotonic()
    response = Client().get("/healthz")
    took = time.monotonic() - started
    body = response.json()
    assert response.status_code == 503 and took < HEALTHZ_WITHIN_S, took
    assert body["checks"]["database"]["ok"] is False
    assert "the database is not answering" in body["checks"]["database"]["detail"]
    assert "start PostgreSQL" in body["checks"]["database"]["hint"]
    # What needs the database is not asked (each would wait for the pool), and says why.
    assert body["checks"]["pgvector"]["detail"] == "not checked: the database is not answering"
    # The process's pages stop waiting for that server too.
    assert outage.circuit_for(database_elsewhere).is_open


def test_the_circuit_refuses_at_once_and_closes_when_the_server_answers(
        no_circuits: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(outage, "PROBE_INTERVAL_S", 0.05)
    circuit = outage.circuit_for({"HOST": str(tmp_path), "NAME": "x"})
    recovered: list[bool] = []
    answers = iter([outage.Probe(False, "no such socket", outage=True)] * 3
                   + [outage.Probe(True, "PostgreSQL 16")])
    monkeypatch.setattr(outage, "probe", lambda params: next(answers))
    circuit.open("no such socket", {}, lambda: recovered.append(True))
    with pytest.raises(outage.DatabaseUnavailable, match="not answering"):
        circuit.refuse_if_open()
    deadline = time.monotonic() + 5
    while circuit.is_open and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not circuit.is_open and recovered == [True]
    circuit.refuse_if_open()  # closed: nothing raised


# -- the real thing ------------------------------------------------------------------------------


@pytest.fixture
def stack() -> Iterator[UpStack]:
    # Not under pytest's basetemp: each pytest session that starts (other tests run on this
    # machine too) makes /tmp/pytest-of-USER private again, and as root the embedded server runs
    # as a user of its own that then cannot reach its data directory to be started again.
    var_dir = Path(tempfile.mkdtemp(prefix="autocoder-outage-"))
    try:
        stack = UpStack.start(var_dir, free_port())
        try:
            yield stack
        finally:
            stack.stop()
    finally:
        shutil.rmtree(var_dir, ignore_errors=True)


@pytest.mark.slow
def test_postgresql_stopped_under_a_running_portal(stack: UpStack) -> None:
    browser = logged_in(stack.base, "admin", stack.admin_password)
    monitor = httpx.Client(base_url=stack.base)
    assert ask(browser, BOARD).status == 200 and ask(monitor, "healthz").status == 200
    postgres = stack.postgres()

    postgres.stop()
    first = ask(browser, BOARD)
    print(f"PostgreSQL stopped: the first page {first.as_dict()}")
    assert first.status == 503 and first.seconds <= PAGE_503_WITHIN_S, first
    assert "The database is not answering; try again in a minute." in first.text
    health = ask(monitor, "healthz")
    print(f"/healthz {health.as_dict()}: {health.text[:300]}")
    assert health.status == 503 and health.seconds <= HEALTHZ_WITHIN_S, health
    database = (health.json or {})["checks"]["database"]
    assert database["ok"] is False and "not answering" in database["detail"]
    htmx = ask(browser, BOARD, **{"HX-Request": "true"})
    assert htmx.status == 503 and 'id="database-unavailable"' in htmx.text, htmx
    api = monitor.post("api/tools/demo/some-tool/run", json={}, timeout=PAGE_TIMEOUT_S,
                       headers={"Authorization": "Bearer not-checked-while-down"})
    assert api.status_code == 503 and api.json()["ok"] is False, api.text
    assert ask(monitor, "login/").status == 200  # what needs no database still works
    # Every web process has met the outage by now, or meets it within one pool timeout.
    later = [ask(browser, BOARD) for _ in range(6)]
    print(f"htmx {htmx.as_dict()}, next pages {[a.as_dict() for a in later]}")
    assert all(a.status == 503 and a.seconds <= PAGE_503_WITHIN_S for a in later), later

    postgres.start()
    restarted, back = time.monotonic(), {}
    while len(back) < 2 and time.monotonic() - restarted < 60:
        for url, client in ((BOARD, browser), ("healthz", monitor)):
            if url not in back and ask(client, url).status == 200:
                back[url] = round(time.monotonic() - restarted, 2)
        time.sleep(0.1)
    print(f"PostgreSQL started again: 200 after {back} s")
    assert back.get(BOARD, 99) <= BACK_WITHIN_S and back.get("healthz", 99) <= BACK_WITHIN_S
    assert "Press Ctrl-C" in "".join(stack.lines)  # up itself went on all along
    assert stack.process.poll() is None
