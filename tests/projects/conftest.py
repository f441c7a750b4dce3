"""Fixtures of the projects tests: the team with every role (tests/teams/conftest.py), shared
rather than copied."""

from tests.teams.conftest import Portal, portal

__all__ = ["Portal", "portal"]
