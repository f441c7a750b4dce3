"""Queries the ORM compiles once per process, for what every page shows.

The navigation's counts (Reviews, the bell) are read on every page, the board's cards on every
look at the board. Their querysets combine the approval rules, the user's teams and what they
may see; building and compiling them costs the ORM 3-6 ms of CPU per page, many times what
PostgreSQL needs to answer them. The SQL is the
same for every request of the same user with the same memberships, so it is compiled once per
process for a key that names everything the queryset is built from, and only executed after.
See docs/operating.md, "Processes and load".
A tool call's reads of its token and tool (tools/selectors.py) are compiled the same way, once
per process, with each call's own values bound in (`fetch_parts`, `Bound`); docs/tools.md,
"Throughput".

With the connection pool on (the default), the compiled SQL is also a prepared statement on
each pooled connection, planned once with a generic plan: PostgreSQL otherwise plans the
Reviews count's union of joins afresh on every page, which cost it 1-2 ms of CPU per page
for a query that runs in 0.2 ms (measured with bench_load's sample data).

The key is the caller's promise: a builder must read nothing but what its key holds (no
`now()`, no ids looked up by an earlier query). tests/foundation/test_compiled_queries.py checks
the callers' compiled text against a fresh compile.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

import psycopg
from django.core.exceptions import EmptyResultSet
from django.db import DEFAULT_DB_ALIAS, connection
from django.db.backends.utils import CursorWrapper
from django.db.models import Model, QuerySet

# Per process: one entry per user and membership shape. Beyond this, the oldest goes.
MAX_ENTRIES = 2048
# A queryset that matches nothing whatever the data (Django raises EmptyResultSet for it).
_NOTHING = None


@dataclass(frozen=True)
class _Compiled:
    sql: str
    params: tuple[Any, ...]
    # (column, converters, expression): what Django applies to a column read from the database
    # (a JSON annotation arrives as text and is decoded, for example).
    converters: tuple[tuple[int, tuple[Any, ...], Any], ...]


_compiled: OrderedDict[Hashable, _Compiled | None] = OrderedDict()
_lock = threading.Lock()


def _compile(key: Hashable, build: Callable[[], QuerySet[Any]]) -> _Compiled | None:
    with _lock:
        if key in _compiled:
            _compiled.move_to_end(key)
            return _compiled[key]
    compiler = build().query.get_compiler(using=DEFAULT_DB_ALIAS)
    try:
        sql, params = compiler.as_sql()
        columns = [column for column, _, _ in compiler.select or []]
        converters = tuple((position, tuple(functions), expression) for position,
                           (functions, expression) in compiler.get_converters(columns).items())
        entry: _Compiled | None = _Compiled(sql, tuple(params), converters)
    except EmptyResultSet:
        entry = _NOTHING
    with _lock:
        _compiled[key] = entry
        while len(_compiled) > MAX_ENTRIES:
            _compiled.popitem(last=False)
    return entry


def compiled_sql(key: Hashable, build: Callable[[], QuerySet[Any]]
                 ) -> tuple[str, tuple[Any, ...]] | None:
    """(sql, params) of `build()`'s queryset, compiled at the first call with `key`; None when
    the queryset can match nothing."""
    entry = _compile(key, build)
    return None if entry is None else (entry.sql, entry.params)


def count_rows(key: Hashable, build: Callable[[], QuerySet[Any]]) -> int:
    """`build().count()`, compiling the queryset only the first time `key` is seen."""
    entry = compiled_sql(key, build)
    if entry is None:
        return 0
    sql, params = entry
    with _cursor() as cursor:
        # `sql` is the ORM's own compiled text; every value is still a bound parameter.
        cursor.execute(f"SELECT COUNT(*) FROM ({sql}) AS counted", params)  # noqa: S608
        row = cursor.fetchone()
    return int(row[0]) if row else 0


def fetch_rows(key: Hashable, build: Callable[[], QuerySet[Any]]) -> list[tuple[Any, ...]]:
    """The rows of `build()`'s `values_list()` queryset, converted as Django converts them,
    compiling the queryset only the first time `key` is seen."""
    entry = _compile(key, build)
    if entry is None:
        return []
    with _cursor() as cursor:
        cursor.execute(entry.sql, entry.params)
        rows = cursor.fetchall()
    return [_converted(row, entry.converters) for row in rows]


class _PreparingCursor(psycopg.Cursor[Any]):
    """A server-side binding cursor whose every statement is prepared on its connection (the
    connection keeps the most recent ones; see psycopg's `prepared_max`)."""

    def execute(self, query: Any, params: Any = None, *, prepare: bool | None = None,
                binary: bool | None = None) -> _PreparingCursor:
        super().execute(query, params, prepare=True, binary=binary)
        return self


def prepared_cursor() -> CursorWrapper:
    """A cursor for hand-written SQL that runs on every request (the session's row): prepared
    like the compiled queries (see `_cursor`)."""
    return _cursor()


def _cursor() -> CursorWrapper:
    """A cursor for compiled SQL: prepared when connections are pooled (a prepared statement
    lives as long as its connection, so without a pool it would be planned every time anyway).
    While queries are logged (DEBUG, a test counting them) Django's own cursor runs it, so the
    log shows the SQL with its values, which a prepared statement does not keep."""
    if not prepared_statements() or connection.queries_logged:
        return connection.cursor()
    connection.ensure_connection()
    # django-stubs types the argument as a CursorWrapper; Django passes the driver's cursor.
    return connection.make_cursor(_PreparingCursor(connection.connection))  # type: ignore[arg-type]


def prepared_statements() -> bool:
    """Whether compiled SQL runs as prepared statements: on with the connection pool."""
    return "pool" in connection.settings_dict.get("OPTIONS", {})


def _converted(row: Any, converters: tuple[tuple[int, tuple[Any, ...], Any], ...]
               ) -> tuple[Any, ...]:
    values = list(row)
    for position, functions, expression in converters:
        for function in functions:
            values[position] = function(values[position], expression, connection)
    return tuple(values)


@dataclass(frozen=True)
class Bound:
    """A value that differs between calls of one compiled query: the builder compiles with
    `sentinel`, each call runs with `value` in its place (both as the database parameter the
    ORM makes of them, e.g. a vector's text)."""

    sentinel: Any
    value: Any


def fetch_rows_bound(key: Hashable, build: Callable[[], QuerySet[Any]],
                     bound: tuple[Bound, ...]) -> list[tuple[Any, ...]]:
    """`fetch_rows` for a queryset with values of its own per call (a search's words, its
    embedding): compiled once with the sentinels, each sentinel parameter replaced by its
    value. A sentinel missing from the compiled parameters is a bug of the caller."""
    entry = _compile(key, build)
    if entry is None:
        return []
    params = list(entry.params)
    for each in bound:
        places = [i for i, param in enumerate(params) if param == each.sentinel]
        if not places:
            raise ValueError(f"compiled query {key!r} has no parameter {each.sentinel!r}")
        for i in places:
            params[i] = each.value
    with _cursor() as cursor:
        cursor.execute(entry.sql, params)
        rows = cursor.fetchall()
    return [_converted(row, entry.converters) for row in rows]


def fetch_instances(key: Hashable, build: Callable[[], QuerySet[Any]],
                    models: tuple[type[Model], ...]) -> list[tuple[Model, ...]]:
    """Model instances, as the ORM would build them, from `build()`'s `values_list()` of every
    concrete field of each of `models` in turn (see `model_columns`), compiled only the first
    time `key` is seen. For rows read on every page (the user's memberships and teams)."""
    instances: list[tuple[Model, ...]] = []
    for row in fetch_rows(key, build):
        built: list[Model] = []
        start = 0
        for model in models:
            names = [f.attname for f in model._meta.concrete_fields]
            built.append(model.from_db(DEFAULT_DB_ALIAS, names, row[start:start + len(names)]))
            start += len(names)
        instances.append(tuple(built))
    return instances


@dataclass(frozen=True)
class Part:
    """One model of a joined row that `fetch_parts` builds: the model, the fields (attnames)
    the row holds of it and the relation that reaches it from the queried model ("" for the
    model itself, "version__" for a related one). Fields left out are deferred, as `only()`
    leaves them: reading one asks the database."""

    model: type[Model]
    fields: tuple[str, ...]
    prefix: str = ""

    def columns(self) -> list[str]:
        """The part's `values_list()` names, in the order `fetch_parts` reads them."""
        return [f"{self.prefix}{name}" for name in self.fields]


def fetch_parts(key: Hashable, build: Callable[[], QuerySet[Any]], parts: tuple[Part, ...],
                bound: tuple[Bound, ...] = ()
                ) -> list[tuple[list[Model | None], tuple[Any, ...]]]:
    """For each row of `build()`'s `values_list()` (each part's `columns()` in turn, then any
    further columns, e.g. annotations): the parts' model instances, as `select_related()` and
    `only()` would build them, and the further columns' values. A part whose primary key is
    NULL (an outer join that found nothing) is None. Compiled only the first time `key` is
    seen, with `bound` as in `fetch_rows_bound`: for the reads every API call makes."""
    built_rows: list[tuple[list[Model | None], tuple[Any, ...]]] = []
    for row in fetch_rows_bound(key, build, bound):
        built: list[Model | None] = []
        start = 0
        for part in parts:
            values = dict(zip(part.fields, row[start:start + len(part.fields)], strict=True))
            start += len(part.fields)
            if values.get(part.model._meta.pk.attname) is None:
                built.append(None)
                continue
            # from_db reads a partial row in the order of the model's fields.
            names = [f.attname for f in part.model._meta.concrete_fields if f.attname in values]
            built.append(part.model.from_db(DEFAULT_DB_ALIAS, names,
                                            [values[name] for name in names]))
        built_rows.append((built, tuple(row[start:])))
    return built_rows


def model_columns(model: type[Model], prefix: str = "") -> list[str]:
    """The `values_list()` names of every concrete field of `model` (`prefix`: the relation
    that reaches it, e.g. "team__"), in the order `fetch_instances` reads them."""
    return [f"{prefix}{f.attname}" for f in model._meta.concrete_fields]


def forget_all() -> None:
    """Drop every compiled query (tests that change how a builder works)."""
    with _lock:
        _compiled.clear()
