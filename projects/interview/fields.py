"""The names of the wizard's form fields; the same keys carry errors to the field they belong to."""

from __future__ import annotations

FIELD_NAME, FIELD_SUMMARY, FIELD_AUTONOMY, FIELD_CONSTRAINTS = (
    "name", "summary", "autonomy", "constraints")
FIELD_COMMANDS, FIELD_REQUEST, FIELD_GENERAL = "commands", "request", "general"


def example_field(command_key: str, index: int, part: str) -> str:
    return f"ex-{command_key}-{index}-{part}"


def command_field(command_key: str, part: str) -> str:
    return f"cmd-{command_key}-{part}"
