"""Pytest plugin (loaded with `-p`, before Django's settings are read).

Starts a private PostgreSQL+pgvector and Redis for the test session on the embedded wheels,
unless DATABASE_URL / REDIS_URL are given, and points the settings at them through the
environment so that subprocesses started by tests (ASGI server, workers) inherit them.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Generator
from pathlib import Path

import pytest


def _scratch_var_dir() -> Path:
    """The session's var directory, never the checkout's: the embedded servers, and the
    installation's secret key (autocoder/secret_key.py), which the settings make there."""
    scratch = Path(tempfile.mkdtemp(prefix="autocoder-test-"))
    # atexit runs last-in first-out: the servers registered later stop before this removal.
    atexit.register(shutil.rmtree, scratch, ignore_errors=True)
    os.environ["AUTOCODER_VAR_DIR"] = str(scratch)
    (scratch / "staticfiles").mkdir()  # whitenoise expects STATIC_ROOT to exist
    return scratch


def _start_services(scratch: Path) -> None:
    from autocoder import embedded

    session_tag = f"autocoder-test-{os.getpid()}"
    # Tests empty the database between tests with TRUNCATE, which the audit log refuses unless
    # the connection says so (projects/migrations/0010_audit_no_truncate.py).
    os.environ["PGOPTIONS"] = (os.environ.get("PGOPTIONS", "")
                               + " -c autocoder.audit_log_truncate=on").strip()
    # Embedding the runtime's API reference takes minutes of CPU: tests/reference loads it
    # explicitly; elsewhere prompts go without it (docs/engine.md, "Reference docs").
    os.environ.setdefault("REFERENCE_AUTOLOAD", "0")
    os.environ.setdefault("DRAMATIQ_NAMESPACE", session_tag)
    os.environ.setdefault("CHANNELS_PREFIX", f"{session_tag}:asgi")
    if not os.environ.get("DATABASE_URL"):
        os.environ["DATABASE_URL"] = embedded.ensure_postgres(scratch / "pg")
    if not os.environ.get("REDIS_URL"):
        os.environ["REDIS_URL"] = embedded.ensure_redis(scratch / "redis")


@pytest.hookimpl(wrapper=True)
def pytest_load_initial_conftests(
    early_config: pytest.Config, parser: pytest.Parser, args: list[str]
) -> Generator[None, None, None]:
    if not early_config.option.help:
        scratch = _scratch_var_dir()
        if not getattr(early_config.option, "collectonly", False):
            _start_services(scratch)
    return (yield)
