"""Stop and start the test session's own Redis (the embedded one on a unix socket), for tests
of what happens while the broker is down."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import redis
from django.conf import settings

from autocoder import embedded


class RedisOutage:
    def __init__(self, socket_path: Path) -> None:
        self.socket_path = socket_path

    def begin(self) -> None:
        """Shut Redis down as a crash would leave it: whatever was not written is gone."""
        client = redis.Redis(unix_socket_path=str(self.socket_path), socket_timeout=5)
        try:
            client.shutdown(nosave=True)
        except redis.ConnectionError:
            pass  # it closed the connection while going away
        deadline = time.monotonic() + 10
        while embedded.redis_responds(self.socket_path):
            assert time.monotonic() < deadline, "Redis did not stop"
            time.sleep(0.05)

    def end(self) -> None:
        """Start it again at the same place, from its append-only file."""
        embedded.ensure_redis(self.socket_path.parent)


def session_redis_socket() -> Path:
    url = settings.REDIS_URL
    if not url.startswith("unix://"):
        pytest.skip(f"needs the session's embedded Redis to stop it; REDIS_URL is {url}")
    return Path(url[len("unix://"):])
