"""When PostgreSQL does not answer: notice it once, fail at once, notice when it answers again.

Without this, every page waited for the connection pool (30 s) and answered 500, and the site
came back only when the pool's own reconnection attempts, spaced further and further apart,
happened to try again. Now each process keeps a small *circuit* per database:

- it opens when a connection could not be had because the server is not answering (the pool
  waited `DATABASE_POOL_TIMEOUT_S` in vain, the server refused or went away), or when
  `/healthz` found it silent;
- while it is open, asking for a connection fails at once (`DatabaseUnavailable`) instead of
  waiting, so every page answers its 503 within milliseconds and the process's one page
  thread (autocoder/http_bridge.py) never queues behind a wait;
- a thread probes the server with a fresh connection (not from the pool) every
  `PROBE_INTERVAL_S`; once it answers, the pool drops the connections the outage broke
  (`ConnectionPool.check`) and the circuit closes: the next page is served as usual.

See docs/operating.md, "When the database is down".
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import psycopg

logger = logging.getLogger(__name__)

PROBE_INTERVAL_S = 0.5
# What /healthz waits for the database at most (a connect to a host that drops packets would
# otherwise take libpq's whole connect_timeout).
HEALTH_DEADLINE_S = 1.5
# SQLSTATEs that mean "the server is not there" rather than "this query failed": connection
# exceptions (class 08), and a server shutting down, crashed or still starting up.
_OUTAGE_SQLSTATES = frozenset({"57P01", "57P02", "57P03"})


class DatabaseUnavailable(psycopg.OperationalError):
    """Raised instead of waiting for a connection while the database is known not to answer.
    Django wraps it as `django.db.OperationalError`, like any failed connection."""


def is_outage(error: BaseException) -> bool:
    """Whether `error` (Django's wrapped error, or psycopg's own) says the database cannot be
    reached, as opposed to a query that failed (a deadlock, a timeout, a constraint)."""
    cause = error
    while cause.__cause__ is not None and not isinstance(cause, psycopg.Error):
        cause = cause.__cause__  # Django raises its own error `from` psycopg's
    if not isinstance(cause, psycopg.OperationalError):
        return False
    state = cause.sqlstate
    return state is None or state.startswith("08") or state in _OUTAGE_SQLSTATES


@dataclass(frozen=True)
class Probe:
    ok: bool
    detail: str
    outage: bool = False  # failed because the server is not answering (not, say, a password)


def probe(params: Mapping[str, Any]) -> Probe:
    """Connect afresh with `params` (never through the pool) and ask the server's version."""
    try:
        with psycopg.connect(**params) as conn:
            row = conn.execute("SELECT current_setting('server_version')").fetchone()
    except psycopg.Error as error:
        return Probe(False, describe(error), outage=is_outage(error))
    return Probe(True, f"PostgreSQL {row[0] if row else '?'}")


def probe_within(params: Mapping[str, Any], deadline_s: float = HEALTH_DEADLINE_S) -> Probe:
    """`probe`, giving up after `deadline_s` (the connect goes on in the background until its
    own connect_timeout, then closes)."""
    answer: list[Probe] = []
    thread = threading.Thread(target=lambda: answer.append(probe(params)),
                              name="database-probe", daemon=True)
    thread.start()
    thread.join(deadline_s)
    if answer:
        return answer[0]
    return Probe(False, f"no answer within {deadline_s:g} s", outage=True)


def describe(error: BaseException) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return text if len(text) <= 300 else text[:297] + "..."


# -- the circuit ---------------------------------------------------------------------------------


Key = tuple[str, str, str, str]  # host, port, database, user: one server's database


def key_of(settings_dict: Mapping[str, Any]) -> Key:
    return (str(settings_dict.get("HOST") or ""), str(settings_dict.get("PORT") or ""),
            str(settings_dict.get("NAME") or ""), str(settings_dict.get("USER") or ""))


class Circuit:
    """One database's state in this process: closed (connect as usual) or open (refuse at
    once while a thread waits for the server to answer again)."""

    def __init__(self, key: Key) -> None:
        self.key = key
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._down_since: float | None = None
        self._reason = ""

    @property
    def is_open(self) -> bool:
        return self._down_since is not None

    def refuse_if_open(self) -> None:
        since = self._down_since
        if since is not None:
            raise DatabaseUnavailable(
                f"the database is not answering ({self._reason}; for "
                f"{time.monotonic() - since:.0f} s)")

    def open(self, reason: str, params: Mapping[str, Any],
             on_recovery: Callable[[], None] = lambda: None) -> None:
        """Refuse connections from now on, and probe with `params` until the server answers;
        then run `on_recovery` (drop the pool's broken connections) and close."""
        with self._lock:
            if self._down_since is not None:
                return
            self._down_since, self._reason = time.monotonic(), reason
            self._stop.clear()
        logger.warning("the database is not answering (%s): pages answer 503 at once until "
                       "it does; probing every %g s", reason, PROBE_INTERVAL_S)
        threading.Thread(target=self._probe_until_back, args=(dict(params), on_recovery),
                         name="database-outage-probe", daemon=True).start()

    def close(self) -> None:
        """Forget the outage (tests, and the prober once the server answers)."""
        with self._lock:
            self._down_since = None
            self._stop.set()

    def _probe_until_back(self, params: dict[str, Any], on_recovery: Callable[[], None]) -> None:
        while not self._stop.is_set():
            answer = probe(params)
            if answer.ok:
                self._recover(on_recovery)
                return
            self._reason = answer.detail
            self._stop.wait(PROBE_INTERVAL_S)

    def _recover(self, on_recovery: Callable[[], None]) -> None:
        since = self._down_since
        try:
            on_recovery()
        except Exception:  # the pool will sort out its connections on its own, more slowly
            logger.warning("could not check the pool's connections", exc_info=True)
        self.close()
        if since is not None:
            logger.warning("the database answers again, after %.1f s", time.monotonic() - since)


_circuits: dict[Key, Circuit] = {}
_circuits_lock = threading.Lock()


def circuit_for(settings_dict: Mapping[str, Any]) -> Circuit:
    key = key_of(settings_dict)
    circuit = _circuits.get(key)
    if circuit is None:
        with _circuits_lock:
            circuit = _circuits.setdefault(key, Circuit(key))
    return circuit


def circuits_reset() -> None:
    """Close every circuit and stop its prober (tests)."""
    for circuit in list(_circuits.values()):
        circuit.close()
