"""What a plugin hands back, made storable.

PostgreSQL keeps neither the NUL character (in text or in jsonb) nor a lone surrogate (a
`\\ud800` with no partner: not a character, not UTF-8), and a plugin's words may hold either:
an error message quoting binary data, a log line of a C string, an answer built from bytes.
Saving the call would fail, and the call would stay "running" until the watchdog gave up on
it. So every text of an outcome (its error, its log lines, the strings and keys of its answer
and of its storage) has them replaced by U+FFFD, the replacement character, before anyone
saves it; everything else is kept as the plugin said it.

A JSON value nested deeper than MAX_DEPTH levels is refused (ValueError): nothing a person
reads is that deep, and pages that print JSON indented would run out of stack on it.

Everything a sandbox job hands back goes through here (docs/sandbox.md, "What comes back"):
its output (autocoder/sandbox/output.py), the JSON files it writes (`storable_loads`: the test
report, the quality pipeline's result) and a plugin call's outcome (autocoder/runtime/
invoke.py), so the test results on a run's checkpoints and an upload's version, the quality
report and the call log are saved whatever the plugin's code printed or raised.
"""

from __future__ import annotations

import json
import re
from typing import Any

REPLACEMENT = "\ufffd"
MAX_DEPTH = 100
UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def storable_text(text: str) -> str:
    """`text` with every NUL and lone surrogate replaced by U+FFFD."""
    return UNSTORABLE.sub(REPLACEMENT, text)


def storable_json(value: Any, depth: int = 1) -> Any:
    """A copy of the JSON `value` with storable strings and keys; ValueError when it is
    nested deeper than MAX_DEPTH."""
    if isinstance(value, str):
        return storable_text(value)
    if not isinstance(value, dict | list):
        return value
    if depth > MAX_DEPTH:
        raise ValueError(f"it is nested more than {MAX_DEPTH} levels deep")
    # Plain loops, not comprehensions: one frame per level keeps the depth check meaningful.
    if isinstance(value, list):
        items = []
        for item in value:
            items.append(storable_json(item, depth + 1))
        return items
    found = {}
    for key, item in value.items():
        found[storable_text(key) if isinstance(key, str) else key] = storable_json(item,
                                                                                   depth + 1)
    return found


def storable_loads(raw: bytes | str) -> Any:
    """The JSON a sandbox job wrote (`raw`), made storable (storable_json); ValueError when it
    is not UTF-8 JSON or is nested too deep (also too deep for the parser itself)."""
    try:
        return storable_json(json.loads(raw))
    except RecursionError:
        raise ValueError(f"it is nested more than {MAX_DEPTH} levels deep") from None
