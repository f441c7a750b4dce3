"""Fixtures of the calling tests: every sandbox backend, and a runtime that is missing."""

from __future__ import annotations

from tests.runtime.conftest import runtime_missing  # noqa: F401  (a fixture)
from tests.sandbox.backends import on_each_backend  # noqa: F401  (a fixture)
