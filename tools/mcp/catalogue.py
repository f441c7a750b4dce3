"""What an assistant sees of a team's tools over MCP: one MCP tool per command of each version
the team has activated (docs/tools.md, "From an assistant (MCP)").

A tool's name is `<plugin>__<command>` (the plugin's normalized name, so `month-totals__totals`):
a person recognises it, and it keeps to the letters, digits, `_` and `-` every client accepts.
Its input schema is the command's declared input (`[commands.input]`) as JSON Schema, or else
inferred from its examples; its output schema is inferred from the examples' outputs when they
are JSON objects (made lenient: a later answer may leave a field out or give a decimal where
the example had a whole number, so clients that check the answer against it do not refuse it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from genson import SchemaBuilder

from autocoder.plugins import InputField
from marketplace.types import StoredCommand
from teams.models import Team
from tools.declared import command_info, command_names, declared_inputs, manifest_of
from tools.models import Activation, VersionBlock
from tools.selectors import FOR_CALLS, tool_for_call

SEPARATOR = "__"
# A file input, as the form and the API take it.
FILE_SCHEMA: dict[str, object] = {
    "type": "object", "required": ["name", "content_base64"], "additionalProperties": False,
    "properties": {"name": {"type": "string", "description": "The file's name"},
                   "content_base64": {"type": "string",
                                      "description": "The file's bytes, base64-encoded"}}}


@dataclass(frozen=True)
class Grant:
    """What one bearer token may reach: a team's tools, or one plugin of them."""

    token_id: int
    team_id: int
    team_slug: str
    plugin_id: int | None  # None: every tool of the team
    base_url: str = ""  # "https://portal.example.org": where the refusals' pages are


@dataclass(frozen=True)
class ToolEntry:
    name: str
    title: str
    description: str
    input_schema: dict[str, object]  # JSON Schema, as MCP sends it
    output_schema: dict[str, object] | None
    sends: bool  # may send data to another system (declared hosts or address settings)
    activation_id: int
    command: str


def tool_name(plugin_name: str, command: str) -> str:
    return f"{plugin_name}{SEPARATOR}{command}"


def _activations(grant: Grant) -> list[Activation]:
    found = (Activation.objects.select_related("plugin", "version", "team").only(*FOR_CALLS)
             .filter(team_id=grant.team_id, status=Activation.Status.ACTIVE)
             .order_by("plugin__normalized_name"))
    if grant.plugin_id is not None:
        found = found.filter(plugin_id=grant.plugin_id)
    blocked = set(VersionBlock.objects.filter(version_id__in=[a.version_id for a in found])
                  .values_list("version_id", flat=True))
    # A disabled version is not offered; a call of it still says why it was refused.
    return [activation for activation in found if activation.version_id not in blocked]


def tools_for(grant: Grant) -> list[ToolEntry]:
    """Every command of every version in force that `grant` reaches, by name."""
    return [entry for activation in _activations(grant)
            for entry in _entries(activation)]


def tool_find(grant: Grant, name: str) -> tuple[Activation, str] | None:
    """The activation in force and the command behind tool `name`, within `grant`; a
    disabled version is found too, so its call is refused in words."""
    plugin_name, _, command = name.partition(SEPARATOR)
    if not command:
        return None
    found = tool_for_call(grant.team_id, plugin_name=plugin_name)
    if found is None or (grant.plugin_id is not None and found.plugin_id != grant.plugin_id):
        return None
    return found, command


def team_of(grant: Grant) -> Team:
    return Team.objects.get(pk=grant.team_id)


def _entries(activation: Activation) -> list[ToolEntry]:
    version = activation.version
    manifest = manifest_of(version)
    sends = bool(manifest and (manifest.hosts or manifest.address_settings))
    entries = []
    for command in command_names(version):
        info = command_info(version, command) or {}
        examples = _examples(activation, command, info)
        fields = declared_inputs(version, command)
        entries.append(ToolEntry(
            name=tool_name(activation.plugin.normalized_name, command),
            title=f"{activation.plugin.name}: {command}",
            description=_description(activation, info),
            input_schema=input_schema(fields, [e["input"] for e in examples]),
            output_schema=output_schema([e["output"] for e in examples]),
            sends=sends, activation_id=activation.pk, command=command))
    return entries


def _examples(activation: Activation, command: str,
              info: StoredCommand) -> list[Mapping[str, object]]:
    """The command's examples ({input, output}), from plugin.toml when the stored summary
    has none."""
    examples: Sequence[Mapping[str, object]] = info.get("examples") or []
    if not examples:
        manifest = manifest_of(activation.version)
        declared = manifest.command(command) if manifest is not None else None
        examples = list(declared.examples) if declared is not None else []
    return [e for e in examples if isinstance(e, dict) and isinstance(e.get("input"), dict)]


def _description(activation: Activation, info: StoredCommand) -> str:
    said = str(info.get("description") or "").strip() or "No description given."
    return (f"{said} (Tool {activation.plugin.name}, version {activation.version.version}, of "
            f"the team {activation.team.name}.)")


def input_schema(fields: list[InputField],
                 example_inputs: list[object]) -> dict[str, object]:
    """JSON Schema of a command's input: the declared fields, else the examples' shape."""
    if fields:
        return {"type": "object", "additionalProperties": False,
                "properties": {field.name: _field_schema(field) for field in fields},
                "required": [field.name for field in fields if field.required]}
    if example_inputs:
        builder = SchemaBuilder(schema_uri=None)
        for example in example_inputs:
            builder.add_object(example)
        schema = builder.to_schema()
        schema.pop("$schema", None)
        return schema if schema.get("type") == "object" else {"type": "object"}
    return {"type": "object"}


def _field_schema(field: InputField) -> dict[str, object]:
    described = {"description": field.description} if field.description else {}
    if field.type == "file":
        return {**FILE_SCHEMA, **described}
    if field.type == "choice":
        return {"type": "string", "enum": list(field.choices), **described}
    if field.type == "table":
        about = (field.description + " " if field.description else "") + "(a table as CSV text)"
        return {"type": "string", "description": about.strip()}
    kind = {"text": "string", "number": "number", "boolean": "boolean"}[field.type]
    return {"type": kind, **described}


def output_schema(example_outputs: list[object]) -> dict[str, object] | None:
    """The shape of the examples' outputs when each is a JSON object, else None."""
    if not example_outputs or not all(isinstance(o, dict) for o in example_outputs):
        return None
    builder = SchemaBuilder(schema_uri=None)
    for output in example_outputs:
        builder.add_object(output)
    schema = builder.to_schema()
    schema.pop("$schema", None)
    return _lenient(schema)


def _lenient(schema: Any) -> Any:
    """No field required, and a whole number only a number (see the module's docstring)."""
    if isinstance(schema, list):
        return [_lenient(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    lenient: dict[str, object] = {}
    for key, value in schema.items():
        if key == "properties" and isinstance(value, dict):  # field names, not keywords
            lenient[key] = {name: _lenient(sub) for name, sub in value.items()}
        elif key != "required":
            lenient[key] = _lenient(value)
    kind = lenient.get("type")
    if kind == "integer":
        lenient["type"] = "number"
    elif isinstance(kind, list):
        lenient["type"] = sorted({"number" if t == "integer" else t for t in kind})
    return lenient
