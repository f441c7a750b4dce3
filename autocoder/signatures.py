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
    (re.compile(r"\b\d+(?:\.\d+)?\b"), "<n>"),
    (re.compile(r"[ \t]+"), " "),
)
MAX_SIGNATURE_CHARS = 300


def normalize_error_signature(text: str) -> str:
    """Reduce an error text to its stable shape: the last non-empty line carries the error."""
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    signature = lines[-1] if lines else ""
    for pattern, replacement in _RULES:
        signature = pattern.sub(replacement, signature)
    return signature.strip()[:MAX_SIGNATURE_CHARS]
