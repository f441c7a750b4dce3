"""The web processes keep even shares of the kept-alive connections
(autocoder/connection_shares.py): a process holding more than its share lets connections go,
one at a time, until it holds no more; one at or under its share keeps every one. The shared
file is real, the clock is the test's; `up` with its real processes is checked in test_up.py."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from autocoder import connection_shares
from autocoder.connection_shares import ConnectionShares, environment_value, shares_file_create

Clients = list[tuple[str, int]]


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Callable[[float], None]:
    now = [1000.0]
    monkeypatch.setattr(connection_shares.time, "monotonic", lambda: now[0])

    def advance(seconds: float) -> None:
        now[0] += seconds
    return advance


@pytest.fixture
def pair(tmp_path: Path, clock: object) -> tuple[ConnectionShares, ConnectionShares]:
    path = tmp_path / "web-shares"
    shares_file_create(path, 2)
    return ConnectionShares(path, 0, 2), ConnectionShares(path, 1, 2)


def clients(first: int, count: int) -> Clients:
    return [("127.0.0.1", port) for port in range(first, first + count)]


def answer(shares: ConnectionShares, connections: Clients, tick: Callable[[float], None],
           gap_s: float = 0.2) -> Clients:
    """One request on each connection, `gap_s` apart: the connections told to close."""
    closed = []
    for client in connections:
        tick(gap_s)
        if shares.should_close(client):
            closed.append(client)
    return closed


def test_a_process_with_more_than_its_share_lets_connections_go_down_to_it(
        pair: tuple[ConnectionShares, ConnectionShares], clock: Callable[[float], None]) -> None:
    busy, quiet = pair
    for mine, theirs in zip(clients(50000, 8), clients(40000, 8), strict=True):
        assert answer(busy, [mine], clock) == [] and answer(quiet, [theirs], clock) == []

    closed = answer(busy, clients(50008, 4), clock)  # 12 against 8
    assert len(closed) == 3  # it keeps 9, an even share of the 17 still connected
    # They reconnect: two land on the quiet process, which keeps them, one on the busy one.
    assert answer(quiet, closed[:2], clock) == [] and answer(busy, closed[2:], clock) == []
    # 10 and 10: nobody lets anything go any more.
    held = [c for c in clients(50000, 12) if c not in closed[:2]]
    assert answer(busy, held, clock, gap_s=0.01) == []
    assert answer(quiet, [*clients(40000, 8), *closed[:2]], clock, gap_s=0.01) == []


def test_connections_the_clients_close_hold_no_share(
        pair: tuple[ConnectionShares, ConnectionShares], clock: Callable[[float], None]) -> None:
    busy, quiet = pair
    # A burst of requests each on a connection of its own ("Connection: close"), as a script
    # or a health check makes: the busy process answered forty, but holds none of them.
    for client in clients(30000, 40):
        clock(0.01)
        assert busy.should_close(client, kept_alive=False) is False
    for mine, theirs in zip(clients(50000, 5), clients(40000, 5), strict=True):
        assert answer(busy, [mine], clock) == [] and answer(quiet, [theirs], clock) == []
    # 5 and 5 kept alive: neither lets one go, and the quiet one sees the busy one's true 5.
    assert answer(busy, clients(50000, 5), clock, gap_s=0.01) == []
    assert answer(quiet, clients(40000, 6), clock) == []  # 6 of 11: within an even share
    # A kept-alive client that says it closes after this answer stops counting at once:
    # 6 against 4 is more than an even share, and the quiet process lets one go.
    assert busy.should_close(("127.0.0.1", 50000), kept_alive=False) is False
    assert answer(quiet, clients(40000, 1), clock) == clients(40000, 1)


def test_at_most_one_connection_goes_per_interval(
        pair: tuple[ConnectionShares, ConnectionShares], clock: Callable[[float], None]) -> None:
    busy, quiet = pair
    quiet.serving()
    # Twelve connections are too many for one of two processes, but within a tenth of a
    # second only one is let go: the client's reconnection shows where it lands first.
    closed = answer(busy, clients(50000, 12), clock, gap_s=0.005)
    assert len(closed) == 1


def test_an_odd_number_of_connections_settles_one_apart(
        pair: tuple[ConnectionShares, ConnectionShares], clock: Callable[[float], None]) -> None:
    first, second = pair
    for mine, theirs in zip(clients(40000, 10), clients(50000, 10), strict=True):
        answer(first, [mine], clock, gap_s=0.01)
        answer(second, [theirs], clock, gap_s=0.01)
    assert answer(second, clients(50010, 1), clock) == []  # 11 against 10


def test_silent_connections_and_processes_stop_counting(
        pair: tuple[ConnectionShares, ConnectionShares], clock: Callable[[float], None]) -> None:
    first, second = pair
    for mine, theirs in zip(clients(40000, 5), clients(50000, 5), strict=True):
        answer(first, [mine], clock, gap_s=0.01)
        answer(second, [theirs], clock, gap_s=0.01)
    clock(2 * connection_shares.IDLE_S + 1)  # everyone went quiet; the second wrote nothing
    # The first's five old connections and the second's old count no longer count: one new
    # connection is one of one, well within an even share.
    assert answer(first, clients(60000, 1), clock) == []


def test_without_the_supervisors_file_or_with_one_process_nothing_is_closed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(connection_shares.ENVIRONMENT, raising=False)
    assert ConnectionShares.from_environment() is None

    path = tmp_path / "web-shares"
    shares_file_create(path, 1)
    monkeypatch.setenv(connection_shares.ENVIRONMENT, environment_value(path, 0, 1))
    assert ConnectionShares.from_environment() is None

    shares_file_create(path, 2)
    monkeypatch.setenv(connection_shares.ENVIRONMENT, environment_value(path, 1, 2))
    shares = ConnectionShares.from_environment()
    assert shares is not None and (shares.index, shares.processes) == (1, 2)


def test_a_missing_or_garbled_file_serves_without_evening_out(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    for value in (environment_value(tmp_path / "gone", 0, 2), "no-numbers-here"):
        monkeypatch.setenv(connection_shares.ENVIRONMENT, value)
        assert ConnectionShares.from_environment() is None
    assert caplog.text.count("connections are not evened out") == 2


def test_a_process_not_yet_or_no_longer_serving_is_not_counted(
        tmp_path: Path, clock: Callable[[float], None]) -> None:
    path = tmp_path / "web-shares"
    shares_file_create(path, 3)
    first, second, third = (ConnectionShares(path, index, 3) for index in range(3))
    for a, b in zip(clients(40000, 10), clients(50000, 10), strict=True):
        assert answer(first, [a], clock, gap_s=0.01) == []
        assert answer(second, [b], clock, gap_s=0.01) == []
    # The third is still loading Django: 10 and 10 is even between the two that serve, and
    # nobody sends connections towards a socket nobody answers yet.
    assert answer(first, clients(40000, 10), clock, gap_s=0.2) == []
    third.serving()  # ready: 10 of 20 is more than a third, one goes at a time
    moved = []
    for client in clients(40000, 10):
        clock(0.2)
        if first.should_close(client):  # it reconnects, and lands on the third
            moved.append(client)
            assert answer(third, [client], clock, gap_s=0.01) == []
    assert len(moved) == 3  # 7, 10 and 3

    # The supervisor saw the third die: its three are no longer counted, nor is it. Its
    # clients come back to the first: 9 of 19 is within an even share of two (a third of 22,
    # 8, had it still counted).
    connection_shares.slot_clear(path, 2)
    assert answer(first, clients(40100, 2), clock, gap_s=0.01) == []


def test_clearing_a_share_whose_file_is_gone_is_logged_not_raised(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    connection_shares.slot_clear(tmp_path / "gone", 1)
    assert "could not clear web process 1's share" in caplog.text
