"""Parsing what people type: `name: value` lines, plain values, JSON, one item per line.

Every error is said in plain words, for the field it belongs to.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

_FIELD_LINE = re.compile(r"^\s*([A-Za-z_][\w \-.]*?)\s*:\s*(.*?)\s*$")


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


def parse_fields(text: str) -> tuple[dict[str, Any], list[str]]:
    """`name: value` lines -> a dict, with a plain-words error for each line that is not one."""
    fields: dict[str, Any] = {}
    errors: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        match = _FIELD_LINE.match(line)
        if match is None:
            errors.append(f"Line {number} (\u201c{_clip(line.strip())}\u201d) needs a name, a "
                          "colon and a value, like \u201ccity: Paris\u201d.")
            continue
        name, value = match.group(1), match.group(2)
        if name in fields:
            errors.append(f"\u201c{name}\u201d is given twice; give it once.")
            continue
        fields[name] = parse_value(value)
    return fields, errors


def looks_like_fields(text: str) -> bool:
    lines = [line for line in text.splitlines() if line.strip()]
    return bool(lines) and all(_FIELD_LINE.match(line) for line in lines)


def parse_example_input(text: str, json_mode: bool) -> tuple[dict[str, Any] | None, list[str]]:
    if not text.strip():
        return {}, []  # an action may need no information at all
    if json_mode:
        value, error = _parse_json(text)
        if error:
            return None, [error]
        if not isinstance(value, dict):
            return None, ["In JSON mode the input must be an object, written in { }."]
        return value, []
    fields, errors = parse_fields(text)
    return (None, errors) if errors else (fields, [])


def parse_example_output(text: str, json_mode: bool) -> tuple[Any, list[str]]:
    if json_mode:
        value, error = _parse_json(text)
        return (None, [error]) if error else (value, [])
    if looks_like_fields(text):
        return parse_fields(text)[0], []
    return parse_value(text), []


def _parse_json(text: str) -> tuple[Any, str]:
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


def _clip(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"
