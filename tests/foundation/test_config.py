"""Settings fall back to the embedded services, and URLs from the environment win."""

from __future__ import annotations

from pathlib import Path

from autocoder import config


def test_embedded_defaults_live_under_the_var_directory() -> None:
    env = {"AUTOCODER_VAR_DIR": "/srv/autocoder/var"}
    assert config.uses_embedded_database(env) and config.uses_embedded_redis(env)
    assert config.redis_url(env) == "unix:///srv/autocoder/var/redis/redis.sock"
    database = config.django_database(config.database_url(env))
    assert database["HOST"] == "/srv/autocoder/var/pg"  # a unix socket directory
    assert database["NAME"] == "postgres" and database["USER"] == config.EMBEDDED_APP_ROLE
    assert database["ENGINE"] == "django.db.backends.postgresql"


def test_var_directory_defaults_to_the_checkout() -> None:
    assert config.var_dir({}) == Path(config.BASE_DIR / "var").resolve()


def test_urls_from_the_environment_win() -> None:
    env = {"DATABASE_URL": "postgres://app:s3cret@db.internal:5433/autocoder",
           "REDIS_URL": "redis://cache.internal:6379/2"}
    assert not config.uses_embedded_database(env) and not config.uses_embedded_redis(env)
    database = config.django_database(config.database_url(env))
    assert (database["HOST"], database["PORT"]) == ("db.internal", 5433)
    assert database["NAME"] == "autocoder"
    assert (database["USER"], database["PASSWORD"]) == ("app", "s3cret")
    assert config.redis_url(env) == "redis://cache.internal:6379/2"


def test_empty_url_counts_as_unset() -> None:
    env = {"DATABASE_URL": "", "REDIS_URL": "", "AUTOCODER_VAR_DIR": "/v"}
    assert config.database_url(env) == config.embedded_database_url(env)
    assert config.redis_url(env) == "unix:///v/redis/redis.sock"


def test_the_running_settings_use_the_session_services() -> None:
    from django.conf import settings

    assert settings.REDIS_URL == config.redis_url()
    [host] = settings.CHANNEL_LAYERS["default"]["CONFIG"]["hosts"]
    assert host["address"] == settings.REDIS_URL
    assert settings.DRAMATIQ_BROKER["OPTIONS"]["url"] == settings.REDIS_URL
