"""Normalized error signatures, shared by the loop detector and lessons learned.

Two failures are "the same mistake" when they differ only in paths, line numbers, addresses,
numbers or quoted values; stripping those makes the signature comparable across runs.
"""

from __future__ import annotations

import re

_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"0x[0-9a-fA-F]+"), "<addr>"),
    (re.compile(r"(?:[A-Za-z]:)?(?:[\w.\-~]*/)+[\w.\-]+"), "<path>"),
    (re.compile(r"\bline \d+\b"), "line <n>"),
    (re.compile(r":\d+(?::\d+)?\b"), ":<n>"),
    (re.compile(r"'[^'\n]{0,200}'|\"[^\"\n]{0,200}\""), "<val>"),
    # A unit glued to a number stays ("0.05s" -> "<n>s"): durations differ, their kind does not.
    (re.compile(r"\b\d+(?:\.\d+)?(?=[A-Za-z]{0,3}\b)"), "<n>"),
    (re.compile(r"[ \t]+"), " "),
)
MAX_SIGNATURE_CHARS = 300
# Banner lines of test runners ("===== 1 failed in 0.05s =====", "----- Captured stdout -----")
# come after the error; they say nothing about which error it was.
_DECORATION = re.compile(r"^[=_\-*~#]{3,}(?:.*[=_\-*~#]{3,})?$")


def normalize_error_signature(text: str) -> str:
    """Reduce an error text to its stable shape: the last non-empty line carries the error."""
    lines = [line.strip() for line in (text or "").splitlines()
             if line.strip() and not _DECORATION.match(line.strip())]
    # Cut before matching: the path rule backtracks quadratically on a long run of word
    # characters (a 100 kB line took over a minute), and only the head can survive anyway.
    signature = lines[-1][:MAX_SIGNATURE_CHARS * 4] if lines else ""
    for pattern, replacement in _RULES:
        signature = pattern.sub(replacement, signature)
    return signature.strip()[:MAX_SIGNATURE_CHARS]
