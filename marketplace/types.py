"""The shapes of what the marketplace stores as JSON and other apps read (docs/plugins.md)."""

from __future__ import annotations

from typing import TypedDict


class CommandExample(TypedDict, total=False):
    """One example of a command: the input (a JSON object) and the output it gave."""

    input: object
    output: object


class StoredCommand(TypedDict, total=False):
    """One entry of `PluginVersion.commands` (services.submissions.commands_with_examples
    writes it): the command's name and description, and its examples."""

    name: str
    description: str
    examples: list[CommandExample]
