"""The portal's session store: Django's database sessions, read with a prepared statement.

Every page reads its session's row. Through the ORM that costs more CPU building the query
than PostgreSQL needs to answer it, so the read is one hand-written statement, prepared on the
pooled connection like the compiled queries (autocoder/compiled_queries.py). Everything else
(saving, expiry, `clearsessions`) is Django's own; see docs/operating.md, "Processes and load".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib.auth import BACKEND_SESSION_KEY
from django.contrib.sessions.backends.db import SessionStore as DatabaseSessionStore
from django.contrib.sessions.models import Session
from django.utils import timezone

from autocoder import authentication
from autocoder.compiled_queries import prepared_cursor

_READ = (f'SELECT "session_data" FROM "{Session._meta.db_table}" '  # noqa: S608 (a constant)
         'WHERE "session_key" = %s AND "expire_date" > %s')


@dataclass(frozen=True)
class _Row:
    session_data: str


class SessionStore(DatabaseSessionStore):
    def load(self) -> dict[str, Any]:
        """The session's data; a login made before the portal's own backend names it instead
        of Django's (the same users and passwords), so nobody is logged out by the change."""
        data = super().load()
        if data.get(BACKEND_SESSION_KEY) == authentication.DJANGO_MODEL_BACKEND:
            data[BACKEND_SESSION_KEY] = authentication.PATH
        return data

    def _get_session_from_db(self) -> _Row | None:  # type: ignore[override]
        """The unexpired row of this session (only `session_data` is read by `load`), or
        None, forgetting the key as Django does for a missing or expired session."""
        key = self.session_key
        if not key:
            self._session_key = None
            return None
        with prepared_cursor() as cursor:
            cursor.execute(_READ, (key, timezone.now()))
            row = cursor.fetchone()
        if row is None:
            self._session_key = None
            return None
        return _Row(session_data=row[0])
