"""Parsing what people type: `name: value` lines, values of several lines (pasted tables, lists,
texts), plain values, JSON, one item per line.

Every error is said in plain words, for the field it belongs to.
"""

from __future__ import annotations

import csv
import json
import math
import re
import textwrap
from typing import Any

_FIELD_LINE = re.compile(r"^\s*([A-Za-z_][\w \-.]*?)\s*:\s*(.*?)\s*$")
# What goes in, when it does not start with a name: a pasted table, list or text is one value.
WHOLE_INPUT_NAME = "text"
NAME_VALUE_HELP = ("For a value that spans several lines (a table, a list, a text), write its "
                   "name and a colon on a line of their own and paste the lines below it.")


def parse_value(text: str) -> Any:
    """A number, list, true/false, null, object or "quoted text" as JSON; anything else as text."""
    text = text.strip()
    try:
        value = json.loads(text)
    except ValueError:
        return text
    if isinstance(value, float) and not math.isfinite(value):
        return text
    return value


def field_line(line: str) -> tuple[str, str] | None:
    """A `name: value` line as (name, value); None for any other line.

    A colon in a time ("Mon 9:30 stand-up") or a web address ("https://...") does not follow a
    name: such lines are data, as in a pasted list of meetings.
    """
    match = _FIELD_LINE.match(line)
    if match is None:
        return None
    colon = line.index(":")
    after = line[colon + 1:colon + 3]
    if line[colon - 1].isdigit() and after[:1].isdigit() or after == "//":
        return None
    return match.group(1), match.group(2)


def parse_fields(text: str) -> tuple[dict[str, object], list[str]]:
    """`name: value` lines -> a dict, with a plain-words error for each line that is not one.

    A name alone on its line ("meetings:") starts a value of several lines: every line below it
    belongs to that value (a pasted table, list, log or text), up to the next name alone at the
    start of a line, or the end.
    """
    fields: dict[str, object] = {}
    errors: list[str] = []
    block: tuple[str, list[str]] | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        field = field_line(line)
        starts_block = field is not None and not field[1] and not line[:1].isspace()
        if block is not None and not starts_block:
            block[1].append(line)
            continue
        if block is not None:
            _store(fields, errors, block[0], _block_value(block[1]))
            block = None
        if not line.strip():
            continue
        if field is None:
            errors.append(f"Line {number} (\u201c{clip(line.strip())}\u201d) needs a name, a "
                          "colon and a value, like \u201ccity: Paris\u201d. " + NAME_VALUE_HELP)
        elif starts_block:
            block = (field[0], [])
        else:
            _store(fields, errors, field[0], parse_value(field[1]))
    if block is not None:
        _store(fields, errors, block[0], _block_value(block[1]))
    return fields, errors


def _store(fields: dict[str, object], errors: list[str], name: str, value: Any) -> None:
    if name in fields:
        errors.append(f"\u201c{name}\u201d is given twice; give it once.")
    else:
        fields[name] = value


def _block_value(lines: list[str]) -> Any:
    return parse_value(textwrap.dedent("\n".join(line.rstrip() for line in lines)))


def starts_with_name(text: str) -> bool:
    """Whether the text begins with a `name: value` line (or a name alone on its line)."""
    first = next((line for line in text.splitlines() if line.strip()), "")
    return field_line(first) is not None


def one_line_ending(text: str) -> str:
    """Text with every line ending as "\n": a browser posts a text area with "\r\n", a file
    saved on Windows keeps it, and an expected result must not differ from its input by that."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def parse_example_input(text: str, json_mode: bool) -> tuple[dict[str, object] | None, list[str]]:
    """What goes in: named values, or (not starting with a name) one pasted value, or JSON."""
    text = one_line_ending(text)
    if not text.strip():
        return {}, []  # a task may need no information at all
    if json_mode:
        value, error = parse_json(text)
        if error:
            return None, [error]
        if not isinstance(value, dict):
            return None, ["In JSON mode the input must be an object, written in { }."]
        return value, []
    if not starts_with_name(text):
        value = _block_value(text.splitlines())
        return (value if isinstance(value, dict) else {WHOLE_INPUT_NAME: value}), []
    fields, errors = parse_fields(text)
    return (None, errors) if errors else (fields, [])


def parse_example_output(text: str, json_mode: bool) -> tuple[Any, list[str]]:
    """What comes back: named values when it reads as such, else one value (text, a number...)."""
    text = one_line_ending(text)
    if json_mode:
        value, error = parse_json(text)
        return (None, [error]) if error else (value, [])
    if starts_with_name(text):
        fields, errors = parse_fields(text)
        if not errors:
            return fields, []
    return parse_value(text), []


def table_rows(text: str) -> list[list[str]] | None:
    """The rows of a pasted table (tab, comma or semicolon separated; every row as wide), or None.

    Two lines with one comma each are more likely prose than a table, so commas and semicolons
    need three lines or three columns.
    """
    lines = [line for line in text.splitlines() if line.strip()]
    for delimiter in ("\t", ",", ";"):
        rows = [[cell.strip() for cell in row] for row in csv.reader(lines, delimiter=delimiter)]
        widths = {len(row) for row in rows}
        if len(lines) >= 2 and len(widths) == 1 and (width := widths.pop()) >= 2 and (
                delimiter == "\t" or len(lines) >= 3 or width >= 3):
            return rows
    return None


def parse_json(text: str) -> tuple[Any, str]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        return None, (f"This is not valid JSON (line {error.lineno}, column {error.colno}): "
                      f"{error.msg}.")
    except (ValueError, RecursionError) as error:
        return None, f"This is not valid JSON: {error}."
    if isinstance(value, float) and not math.isfinite(value):
        return None, "This is not valid JSON: numbers must be finite."
    return value, ""


def parse_lines(text: str) -> list[str]:
    return [line.strip(" \t-*\u2022") for line in text.splitlines() if line.strip(" \t-*\u2022")]


def clip(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"
