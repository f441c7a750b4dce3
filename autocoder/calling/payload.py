"""What a command's payload must look like against the input schema its plugin declares
(docs/plugins.md, "Input schema"), for the tools' form, their HTTP API and "Try it" alike.

The declarations themselves (`[[settings]]`, `[commands.input]`) are part of the plugin
contract and read in autocoder/plugins/ (`PluginManifest.settings`, `CommandDecl.inputs`).
A payload's problems are sentences naming the field.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from autocoder.plugins.declarations import InputField


def payload_errors(fields: list[InputField], payload: Mapping[str, Any]) -> list[str]:
    """What is wrong with a command's payload against its declared fields ([] if nothing).

    Values, per type: text a string; number an integer or a decimal; boolean true/false;
    choice one of its choices; table the table as CSV text (header line first); file an
    object {"name": "...", "content_base64": "..."}. Keys the schema does not declare are
    refused. With no declared fields there is nothing to check.
    """
    if not fields:
        return []
    errors: list[str] = []
    known = {field.name for field in fields}
    for key in payload:
        if key not in known:
            errors.append(f"{key}: not an input of this command (expected"
                          f" {', '.join(sorted(known))})")
    for field in fields:
        if field.name not in payload or payload[field.name] is None:
            if field.required:
                errors.append(f"{field.name}: required")
            continue
        problem = _value_problem(field, payload[field.name])
        if problem:
            errors.append(f"{field.name}: {problem}")
    return errors


def _value_problem(field: InputField, value: object) -> str:
    if field.type in ("text", "table"):
        return "" if isinstance(value, str) else (
            "must be text" if field.type == "text" else "must be the table as CSV text")
    if field.type == "number":
        ok = (isinstance(value, int | float) and not isinstance(value, bool)
              and math.isfinite(value))
        return "" if ok else "must be a number"
    if field.type == "boolean":
        return "" if isinstance(value, bool) else "must be true or false"
    if field.type == "choice":
        return "" if value in field.choices else f"must be one of {', '.join(field.choices)}"
    # file
    if (isinstance(value, dict) and isinstance(value.get("name"), str)
            and isinstance(value.get("content_base64"), str)
            and set(value) <= {"name", "content_base64"}):
        return ""
    return 'must be a file: {"name": "...", "content_base64": "..."}'
