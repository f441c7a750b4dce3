"""Fixtures of the runs tests, shared rather than copied: the portal's team with every role
(tests/teams/conftest.py), the engine's people and scripted runs (tests/engine/conftest.py)."""

from tests.engine.conftest import engine_settings, people, start_run
from tests.teams.conftest import Portal, portal

__all__ = ["Portal", "engine_settings", "people", "portal", "start_run"]
