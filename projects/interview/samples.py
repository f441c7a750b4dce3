"""Sample files attached to an example: which are accepted, and the value each one becomes.

An accepted file is added to the example's "What goes in" text as a value of several lines named
after the file, so the requester sees (and can edit) exactly what the plugin will be given, and
the stored answers stay plain text like everything else the wizard keeps.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from projects.interview.parsing import clip, parse_fields, parse_json, starts_with_name

SAMPLE_SUFFIXES = (".csv", ".txt", ".json")
# An example (input and output together) may hold at most 20,000 characters of JSON (the spec's
# MAX_EXAMPLE_JSON_CHARS); a 16 KB file leaves room for the rest of the example.
MAX_SAMPLE_BYTES = 16 * 1024
SAMPLE_LIMIT_WORDS = "16 KB"
_INDENT = "  "  # keeps the file's own "name:" lines from starting another value


@dataclass(frozen=True)
class SampleFile:
    """An uploaded file: its name, its size, and its content when the size is within the limit
    (a bigger file is refused unread)."""

    name: str
    size: int
    content: bytes


def sample_text(sample: SampleFile) -> tuple[str, str]:
    """The file's text, or ("", the reason it is refused, in plain words)."""
    label = f"\u201c{clip(sample.name)}\u201d"
    if PurePath(sample.name).suffix.lower() not in SAMPLE_SUFFIXES:
        return "", (f"{label} is not a CSV, text or JSON file. From a spreadsheet, choose "
                    "\u201cSave as\u201d and CSV, then attach that file.")
    if sample.size > MAX_SAMPLE_BYTES:
        return "", (f"{label} is {_size(sample.size)}; a sample file can be at most "
                    f"{SAMPLE_LIMIT_WORDS}. Attach a shorter extract: a few dozen lines make a "
                    "good example.")
    if not sample.content.strip():
        return "", f"{label} is empty."
    if b"\x00" in sample.content:
        return "", (f"{label} is not plain text (it may be a picture, a PDF or a spreadsheet). "
                    "Save it as CSV or plain text and attach it again.")
    try:
        text = sample.content.decode("utf-8-sig")
    except UnicodeDecodeError:
        return "", (f"{label} is not written in UTF-8, the text encoding read here. When saving, "
                    "choose \u201cCSV UTF-8\u201d (spreadsheets) or UTF-8 (text editors).")
    text = text.replace("\r\n", "\n").replace("\r", "\n").strip("\n")
    if PurePath(sample.name).suffix.lower() == ".json":
        _, problem = parse_json(text)
        if problem:
            return "", f"{label}: {problem}"
    return text, ""


def attach_samples(data: dict[str, Any], files: Mapping[str, SampleFile]) -> dict[str, list[str]]:
    """Add each accepted file to its example's input text in `data` (in place).

    `files` is keyed by the example's file field (ex-<command>-<row>-file); the problems come back
    keyed the same way, and a refused file changes nothing.
    """
    errors: dict[str, list[str]] = {}
    for field, sample in files.items():
        if not field.endswith("-file") or not sample.name:
            continue
        input_field = field.removesuffix("file") + "in"
        if input_field not in data:
            continue
        if data.get(field.removesuffix("file") + "json"):
            errors[field] = ["Untick \u201cI wrote this example as JSON\u201d to attach a file, "
                             "or paste the file's content into the JSON yourself."]
            continue
        text, problem = sample_text(sample)
        if problem:
            errors[field] = [problem]
        else:
            data[input_field] = with_sample(str(data[input_field]), sample.name, text)
    return errors


def with_sample(given: str, filename: str, text: str) -> str:
    """The input text with the file's content added as a value named after the file."""
    taken = set(parse_fields(given)[0]) if starts_with_name(given) else set()
    base = name = sample_name(filename)
    number = 2
    while name in taken:
        name, number = f"{base}_{number}", number + 1
    block = "\n".join(_INDENT + line if line.strip() else "" for line in text.split("\n"))
    value = f"{name}:\n{block}"
    return f"{given.rstrip()}\n{value}" if given.strip() else value


def sample_name(filename: str) -> str:
    """"Meetings March.csv" -> meetings_march: a name that reads as a name in the input text."""
    stem = re.sub(r"[^a-z0-9]+", "_", PurePath(filename).stem.lower()).strip("_")[:40]
    return stem if stem[:1].isalpha() else f"file_{stem}".rstrip("_")


def _size(size: int) -> str:
    if size >= 1024 * 1024:
        return f"{size / (1024 * 1024):.1f} MB"
    return f"{max(size // 1024, 1)} KB"

