"""Shared fixtures. The database and Redis come from config.testing.pytest_plugin."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import dramatiq
import pytest
import redis
from django.conf import settings
from django.db import connection

from tests.factories import MembershipFactory, TeamFactory, UserFactory


def pytest_configure(config: pytest.Config) -> None:
    """Passwords hashed with one round in this process (tests/hashers.py)."""
    from django.contrib.auth import hashers

    settings.PASSWORD_HASHERS = ["tests.hashers.OneRoundPBKDF2PasswordHasher",
                                 *(name for name in settings.PASSWORD_HASHERS
                                   if not name.endswith(".PBKDF2PasswordHasher"))]
    hashers.get_hashers.cache_clear()
    hashers.get_hashers_by_algorithm.cache_clear()


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup: None, django_db_blocker: Any) -> Iterator[None]:
    """pytest-django's test database, and at the end, before it is dropped, the sessions other
    processes left on it ended: a live server or worker stopped a moment earlier whose backend
    has not noticed yet made the drop fail ("being accessed by other users")."""
    yield
    with django_db_blocker.unblock(), connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                       "WHERE datname = current_database() AND pid <> pg_backend_pid()")


@pytest.fixture
def redis_client() -> redis.Redis:
    return redis.Redis.from_url(settings.REDIS_URL)


@pytest.fixture
def clean_redis(redis_client: redis.Redis) -> Iterator[redis.Redis]:
    """Redis emptied before and after the test (the test session owns this server)."""
    redis_client.flushdb()
    yield redis_client
    redis_client.flushdb()


@pytest.fixture
def team_with_roles(db: None) -> dict[str, object]:
    """A team with an admin ('owner'), a requester ('member'), and an outsider in another team."""
    team = TeamFactory(slug="acme", name="Acme")
    owner, member, outsider = UserFactory(), UserFactory(), UserFactory()
    MembershipFactory(team=team, user=owner, role="admin")
    MembershipFactory(team=team, user=member, role="requester")
    MembershipFactory(team=TeamFactory(slug="other"), user=outsider, role="admin")
    return {"team": team, "owner": owner, "member": member, "outsider": outsider}


@pytest.fixture
def worker(clean_redis: redis.Redis) -> Iterator[dramatiq.Worker]:
    """A real Dramatiq worker in this process on the session's Redis, its queues emptied
    before and after (config.testing.workers.in_process_worker)."""
    from config.testing.workers import in_process_worker

    broker = dramatiq.get_broker()
    broker.flush_all()
    with in_process_worker() as running:
        yield running
    broker.flush_all()

