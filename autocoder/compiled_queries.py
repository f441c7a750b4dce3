"""Counting with a query the ORM compiled once, for the counts every page shows.

The navigation's counts (Reviews, the bell) are read on every page. Their querysets combine
the approval rules, the user's teams and what they may see; building and compiling them costs
the ORM 3-6 ms of CPU per page, many times what PostgreSQL needs to answer them. The SQL is the
same for every request of the same user with the same memberships, so it is compiled once per
process for a key that names everything the queryset is built from, and only executed after.
See docs/operating.md, "Processes and load".

The key is the caller's promise: a builder must read nothing but what its key holds (no
`now()`, no ids looked up by an earlier query). tests/foundation/test_compiled_queries.py checks
the callers' compiled text against a fresh compile.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

from django.core.exceptions import EmptyResultSet
from django.db import connection
from django.db.models import QuerySet

# Per process: one entry per user and membership shape. Beyond this, the oldest goes.
MAX_ENTRIES = 2048
# A queryset that matches nothing whatever the data (Django raises EmptyResultSet for it).
_NOTHING = None

_compiled: OrderedDict[Hashable, tuple[str, tuple[Any, ...]] | None] = OrderedDict()
_lock = threading.Lock()


def compiled_sql(key: Hashable, build: Callable[[], QuerySet[Any]]
                 ) -> tuple[str, tuple[Any, ...]] | None:
    """(sql, params) of `build()`'s queryset, compiled at the first call with `key`; None when
    the queryset can match nothing."""
    with _lock:
        if key in _compiled:
            _compiled.move_to_end(key)
            return _compiled[key]
    try:
        sql, params = build().query.sql_with_params()
        entry: tuple[str, tuple[Any, ...]] | None = (sql, tuple(params))
    except EmptyResultSet:
        entry = _NOTHING
    with _lock:
        _compiled[key] = entry
        while len(_compiled) > MAX_ENTRIES:
            _compiled.popitem(last=False)
    return entry


def count_rows(key: Hashable, build: Callable[[], QuerySet[Any]]) -> int:
    """`build().count()`, compiling the queryset only the first time `key` is seen."""
    entry = compiled_sql(key, build)
    if entry is _NOTHING:
        return 0
    sql, params = entry
    with connection.cursor() as cursor:
        # `sql` is the ORM's own compiled text; every value is still a bound parameter.
        cursor.execute(f"SELECT COUNT(*) FROM ({sql}) AS counted", params)  # noqa: S608
        row = cursor.fetchone()
    return int(row[0]) if row else 0


def forget_all() -> None:
    """Drop every compiled query (tests that change how a builder works)."""
    with _lock:
        _compiled.clear()
