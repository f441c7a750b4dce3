"""The curl command the tool's pages show, built so that it works as copied (the builder,
`curl_command`, is autocoder/plugins/api_calls.py's: a generated README prints the same).

Its address is the one the page was asked for (`request.build_absolute_uri`: an `http://`
portal gets `http://`), the token's place is named plainly (YOUR-TOKEN) unless the page has
just made the token, and its body is the input of a command's first example, which the
version's tests passed: a person who pastes it gets 200, not 422 for an empty `{}`.
docs/tools.md ("Calling a tool from another system") shows one.
"""

from __future__ import annotations

from typing import Any

from autocoder.plugins.api_calls import curl_command
from marketplace.models import PluginVersion
from tools.declared import command_info, command_names

__all__ = ["api_example", "curl_command", "first_example"]


def first_example(version: PluginVersion, command: str) -> dict[str, Any] | None:
    """The input of the command's first example, when it is a JSON object."""
    examples = (command_info(version, command) or {}).get("examples") or []
    first = examples[0] if examples else None
    found = first.get("input") if isinstance(first, dict) else None
    return found if isinstance(found, dict) else None


def api_example(version: PluginVersion) -> tuple[str, dict[str, Any]]:
    """The command an example calls and its input: the first command with an example (its
    first example's input), else the first command with an empty input."""
    names = command_names(version)
    for name in names:
        example = first_example(version, name)
        if example is not None:
            return name, example
    return (names[0] if names else "command"), {}
