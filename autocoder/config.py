"""Where the services live: pure functions from the environment to connection settings.

Kept free of Django so settings, `manage.py`, the test plugin and `doctor` share one answer to
"which database and which Redis?" - the URL from the environment, else the embedded default
under the var directory.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

BASE_DIR = Path(__file__).resolve().parent.parent


def var_dir(env: Mapping[str, str] = os.environ) -> Path:
    """Directory for embedded data (PostgreSQL cluster, Redis socket, artifacts)."""
    return Path(env.get("AUTOCODER_VAR_DIR") or BASE_DIR / "var").resolve()


def embedded_pg_dir(env: Mapping[str, str] = os.environ) -> Path:
    return var_dir(env) / "pg"


def embedded_redis_dir(env: Mapping[str, str] = os.environ) -> Path:
    return var_dir(env) / "redis"


# The embedded server's role for the portal: no superuser rights (autocoder/embedded_role.py).
EMBEDDED_APP_ROLE = "autocoder"
EMBEDDED_SUPERUSER = "postgres"


def embedded_database_url(env: Mapping[str, str] = os.environ, *,
                          user: str = EMBEDDED_APP_ROLE) -> str:
    # The embedded server listens on a unix socket inside its data directory, with trust auth.
    socket_dir = quote(str(embedded_pg_dir(env)), safe="")
    return f"postgres://{user}@{socket_dir}/postgres"


def embedded_redis_url(env: Mapping[str, str] = os.environ) -> str:
    return f"unix://{embedded_redis_dir(env) / 'redis.sock'}"


def database_url(env: Mapping[str, str] = os.environ) -> str:
    return env.get("DATABASE_URL") or embedded_database_url(env)


def redis_url(env: Mapping[str, str] = os.environ) -> str:
    return env.get("REDIS_URL") or embedded_redis_url(env)


def uses_embedded_database(env: Mapping[str, str] = os.environ) -> bool:
    return not env.get("DATABASE_URL")


def uses_embedded_redis(env: Mapping[str, str] = os.environ) -> bool:
    return not env.get("REDIS_URL")


def django_database(url: str) -> dict[str, Any]:
    """DATABASES['default'] for `url`; a percent-encoded host is a unix socket directory."""
    import environ

    database: dict[str, Any] = environ.Env.db_url_config(url)
    database["HOST"] = unquote(str(database.get("HOST", "")))
    return database
