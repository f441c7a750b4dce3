"""What the tools' commands read from their options the same way: the team, the member, the
tool in use and a JSON object (tool_activate, tool_call, tool_schedule, tool_token,
tool_trigger)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError
from django.http import Http404

from autocoder.plugins.names import normalize_name
from teams.models import Team
from tools import selectors
from tools.json_input import JsonInputError, json_input_parse
from tools.models import Activation


def team_option(slug: str) -> Team:
    team = Team.objects.filter(slug=slug).first()
    if team is None:
        raise CommandError(f"no team with slug {slug!r}")
    return team


def user_option(username: str) -> Any:
    """The user named `username` (the project's user model)."""
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise CommandError(f"no user named {username!r}")
    return user


def tool_option(team: Team, plugin: str) -> Activation:
    """The team's activation of the plugin named `plugin`, as its members see it."""
    try:
        return selectors.tool_for_member(team, normalize_name(plugin))
    except Http404:
        raise CommandError(f"{team.name} does not use a plugin named "
                           f"{plugin!r} (none of its versions is active)") from None


def json_object_option(text: str, *, option: str, nothing: str) -> dict[str, object]:
    """A JSON object given on the command line, read as the API reads a body; a CommandError
    saying so, and that `nothing` happened ("Nothing was run."), when it cannot be used."""
    try:
        value = json_input_parse(text)
    except JsonInputError as exc:
        raise CommandError(f"{option} is not JSON the tool can use: {exc} {nothing}") from None
    if not isinstance(value, dict):
        raise CommandError(f'{option} must be a JSON object, like {{"text": "hello"}}. '
                           f"{nothing}")
    return value
