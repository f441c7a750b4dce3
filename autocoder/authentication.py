"""The portal's authentication backend: Django's ModelBackend, reading each request's user with
a prepared statement.

Every page loads its user from the session's user id. Through the ORM that costs more CPU
building the query than PostgreSQL needs to answer it, as the session's own read did
(autocoder/sessions.py), so it is one hand-written statement prepared on the pooled connection.
Logging in, passwords and permissions stay Django's. See docs/operating.md, "Processes and load".
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import User
from django.db import DEFAULT_DB_ALIAS

from autocoder.compiled_queries import prepared_cursor

# Sessions made before this backend named Django's; they are read as this one's (sessions.py).
DJANGO_MODEL_BACKEND = "django.contrib.auth.backends.ModelBackend"
PATH = f"{__name__}.PreparedUserBackend"

_FIELDS = User._meta.concrete_fields
_COLUMNS = ", ".join(f'"{field.column}"' for field in _FIELDS)
_READ = f'SELECT {_COLUMNS} FROM "{User._meta.db_table}" WHERE "id" = %s'  # noqa: S608 (constants)
_ATTNAMES = [field.attname for field in _FIELDS]


class PreparedUserBackend(ModelBackend):
    def get_user(self, user_id: Any) -> User | None:
        """The active user with this id, as ModelBackend answers (None: gone or inactive)."""
        with prepared_cursor() as cursor:
            cursor.execute(_READ, (user_id,))
            row = cursor.fetchone()
        if row is None:
            return None
        user = User.from_db(DEFAULT_DB_ALIAS, _ATTNAMES, row)
        return user if self.user_can_authenticate(user) else None
