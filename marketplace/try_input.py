"""What "Try it" makes of what a person typed: a JSON object, or, for a command with one input
(its first example names one), the text itself, a number or a pasted table, as the tools' form
does (tools/forms.py; the marketplace imports nothing of the tools). Anything else is refused in
plain words with the command's example, never with a JSON parser's message.
"""

from __future__ import annotations

import csv
import io
import json
import re
from typing import Any

from autocoder.plugins import InputField, PluginManifest, read_manifest
from marketplace.models import PluginVersion
from marketplace.types import StoredCommand

MAX_TABLE_ROWS = 10_000
NUMBER = re.compile(r"[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?")


class TryInputError(ValueError):
    """Input "Try it" cannot use; `str()` says how to write it."""


# What a declared input's box starts with when a command has no example (its type's empty
# value): enough to show the input's name and kind, and what pasted text becomes.
_EMPTY: dict[str, object] = {"text": "", "table": "", "number": 0, "boolean": False,
                          "file": {"name": "", "content_base64": ""}}


def try_commands(version: PluginVersion) -> list[StoredCommand]:
    """The version's commands as "Try it" offers them: a command without an example but with
    an input schema (`[commands.input]` of plugin.toml) gets one made from the schema."""
    manifest = read_manifest(version.files.get("plugin.toml", ""))
    found = []
    for command in version.commands:
        if isinstance(command, dict) and not command.get("examples"):
            sample = _schema_sample(manifest, str(command.get("name", "")))
            command = {**command, "examples": [{"input": sample}]} if sample else command
        found.append(command)
    return found


def _schema_sample(manifest: PluginManifest | None, command: str) -> dict[str, object]:
    declared = manifest.command(command) if manifest is not None else None
    return {field.name: _empty(field) for field in declared.inputs} if declared else {}


def _empty(field: InputField) -> Any:
    if field.type == "choice" and field.choices:
        return field.choices[0]
    return _EMPTY.get(field.type, "")


def command_example(commands: list[StoredCommand], name: str) -> dict[str, object] | None:
    """The input of the command's first example, when it is a JSON object."""
    for command in commands:
        if isinstance(command, dict) and command.get("name") == name:
            examples = command.get("examples") or []
            first = examples[0] if examples else None
            found = first.get("input") if isinstance(first, dict) else None
            return found if isinstance(found, dict) else None
    return None


def try_payload(text: str, example: dict[str, object] | None) -> dict[str, object]:
    """The payload for `text`: a JSON object as it is, else the one input the example names."""
    stripped = text.strip()
    if not stripped:
        return {}
    try:
        parsed = json.loads(stripped)
    except ValueError as exc:
        if stripped.startswith(("{", "[")):
            where = (f" (near line {exc.lineno}, column {exc.colno})"
                     if isinstance(exc, json.JSONDecodeError) else "")
            raise TryInputError(f"This starts like JSON but is not valid JSON{where}: check "
                                "its quotes, commas and brackets." + _how(example)) from None
        parsed = None
    if isinstance(parsed, dict):
        return parsed
    if example is None or len(example) != 1:
        raise TryInputError("Write the input as a JSON object." + _how(example))
    name, sample = next(iter(example.items()))
    return {name: _as_input(text, sample, example)}


def _how(example: dict[str, object] | None) -> str:
    if not example:
        return ' For example {"text": "hello"}, or {} for a command that needs nothing.'
    shown = json.dumps(example, ensure_ascii=False)
    shown = shown if len(shown) <= 200 else shown[:200] + "…"
    if len(example) == 1:
        return (f" For example {shown}; or paste just the {next(iter(example))} itself (a text,"
                " or a table with a header line).")
    return (f" This command takes {len(example)} inputs ({', '.join(example)}), so write them"
            f" as one JSON object, for example {shown}.")


def _as_input(text: str, sample: object, example: dict[str, object]) -> object:
    if isinstance(sample, str):
        return "\n".join(text.strip("\n").splitlines())
    if isinstance(sample, int | float) and not isinstance(sample, bool):
        value = _number(text.strip())
        if value is None:
            raise TryInputError("Write a number, like 12 or 3.5." + _how(example))
        return value
    if isinstance(sample, list) and sample and all(isinstance(v, dict) for v in sample):
        return _records(_rows(text), sample[0], example)
    if isinstance(sample, list) and all(isinstance(v, str) for v in sample):
        return [line.strip() for line in text.splitlines() if line.strip()]
    raise TryInputError("Write the input as a JSON object." + _how(example))


def _number(text: str) -> int | float | None:
    if text.count(",") == 1 and "." not in text:
        text = text.replace(",", ".")
    if not NUMBER.fullmatch(text):
        return None
    value = float(text)
    return int(value) if re.fullmatch(r"[-+]?\d+", text) else value


def _rows(text: str) -> list[list[str]]:
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) > MAX_TABLE_ROWS + 1:
        raise TryInputError(f"At most {MAX_TABLE_ROWS} rows.")
    # Tab-separated when copied from a spreadsheet, else CSV with commas or semicolons.
    delimiter = "\t" if "\t" in lines[0] else (";" if lines[0].count(";") >
                                                 lines[0].count(",") else ",")
    return [[cell.strip() for cell in row] for row in
            csv.reader(io.StringIO("\n".join(lines)), delimiter=delimiter)]


def _records(rows: list[list[str]], sample: dict[str, object],
             example: dict[str, object]) -> list[dict[str, object]]:
    header, body = rows[0], rows[1:]
    if len(set(header)) != len(header) or not all(header):
        raise TryInputError("The table's first line must name every column, each once."
                            + _how(example))
    records = []
    for number, row in enumerate(body, start=2):
        if len(row) != len(header):
            raise TryInputError(f"Line {number} of the table has {len(row)} cells; the first "
                                f"line names {len(header)} columns.")
        records.append({column: _cell(sample.get(column), cell)
                        for column, cell in zip(header, row, strict=True)})
    return records


def _cell(wanted: Any, cell: str) -> Any:
    # Numbers where the example has numbers: a pasted "12.50" is what the plugin was shown.
    if isinstance(wanted, int | float) and not isinstance(wanted, bool):
        value = _number(cell)
        return cell if value is None else value
    return cell
