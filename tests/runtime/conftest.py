"""Fixtures of the plugin-runtime tests: a runtime broken on purpose, next to the real one."""

from __future__ import annotations

import json
import venv
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from autocoder.runtime import STAMP_NAME, requirements_digest
from autocoder.sandbox import probe as runtime_probe
from tests.sandbox.backends import on_each_backend  # noqa: F401  (a fixture)


def forget_probe() -> None:
    runtime_probe._cached = None


@pytest.fixture
def runtime_without_pytest(settings: Any, tmp_path: Path) -> Iterator[Path]:
    """A runtime that claims to be complete but lacks pytest: the fault users met when the
    sandbox ran plugin tests on an interpreter without it."""
    broken = tmp_path / "broken-runtime"
    venv.EnvBuilder(with_pip=False, symlinks=True).create(broken)
    (broken / STAMP_NAME).write_text(json.dumps({"digest": requirements_digest()}))
    settings.PLUGIN_RUNTIME_DIR = str(broken)
    forget_probe()
    yield broken
    forget_probe()


@pytest.fixture
def runtime_missing(settings: Any, tmp_path: Path) -> Iterator[Path]:
    missing = tmp_path / "never-built"
    settings.PLUGIN_RUNTIME_DIR = str(missing)
    forget_probe()
    yield missing
    forget_probe()

