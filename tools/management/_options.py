"""What the tools' commands read from their options the same way (tool_call, tool_schedule)."""

from __future__ import annotations

from django.core.management.base import CommandError

from tools.json_input import JsonInputError, json_input_parse


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
