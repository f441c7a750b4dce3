"""The curl command the tool's pages show, built so that it works as copied (the builder,
`curl_command`, is autocoder/plugins/api_calls.py's: a generated README prints the same).

Its address is the one the page was asked for (`request.build_absolute_uri`: an `http://`
portal gets `http://`), the token's place is named plainly (YOUR-TOKEN) unless the page has
just made the token, and its body is the input of a command's first example, which the
version's tests passed, else a value of each field the command declares it needs: a person
who pastes it gets 200, not 422 for an empty `{}`. A command that neither has an example nor
declares its input gets `{}`, and the page says to put its input there.
docs/tools.md ("Calling a tool from another system") shows one.
"""

from __future__ import annotations

from typing import Any

from autocoder.plugins.api_calls import curl_command
from autocoder.plugins.declarations import InputField
from marketplace.models import PluginVersion
from tools.declared import command_info, command_names, declared_inputs

__all__ = ["api_example", "curl_command", "example_known", "first_example"]


def first_example(version: PluginVersion, command: str) -> dict[str, object] | None:
    """The input of the command's first example, when it is a JSON object."""
    examples = (command_info(version, command) or {}).get("examples") or []
    first = examples[0] if examples else None
    found = first.get("input") if isinstance(first, dict) else None
    return found if isinstance(found, dict) else None


def api_example(version: PluginVersion) -> tuple[str, dict[str, object]]:
    """The command an example calls and its input: the first command with an example (its
    first example's input), else the first command that declares its input (a value of each
    needed field's type), else the first command with an empty input."""
    names = command_names(version)
    for name in names:
        example = first_example(version, name)
        if example is not None:
            return name, example
    for name in names:
        declared = declared_inputs(version, name)
        if declared:
            return name, {f.name: _sample(f) for f in declared if f.required}
    return (names[0] if names else "command"), {}


def example_known(version: PluginVersion, command: str) -> bool:
    """Whether the body `api_example` gives `command` is one the version says it takes."""
    return first_example(version, command) is not None or bool(
        declared_inputs(version, command)) or not command_names(version)


# A value of each declared type that the runtime's input check accepts
# (autocoder/calling/payload.py payload_errors).
_SAMPLES: dict[str, object] = {"text": "text", "number": 1, "boolean": False,
                            "table": "column\nvalue\n"}


def _sample(field: InputField) -> Any:
    if field.type == "choice":
        return field.choices[0] if field.choices else ""
    if field.type == "file":
        return {"name": "file.txt", "content_base64": ""}
    return _SAMPLES.get(field.type, "")

