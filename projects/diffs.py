"""Rows for showing code, unified diffs and side-by-side diffs in templates (no database).

Line numbers are kept on every row so that a safety finding ("plugin.py line 12") can be
highlighted on the exact line, and so that screen-reader users hear where a change is.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field

from autocoder.engine.replies import unified_diff

_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")
MAX_DIFF_LINES = 5000


@dataclass(frozen=True)
class DiffRow:
    kind: str  # file | meta | hunk | add | del | ctx
    text: str
    old_no: int | None = None
    new_no: int | None = None


@dataclass(frozen=True)
class SplitRow:
    kind: str  # file | hunk | equal | replace | delete | insert
    left: str = ""
    right: str = ""
    left_no: int | None = None
    right_no: int | None = None


@dataclass(frozen=True)
class CodeLine:
    number: int
    text: str
    findings: tuple[str, ...] = ()


@dataclass
class DiffView:
    rows: list[DiffRow] = field(default_factory=list)
    added: int = 0
    removed: int = 0
    truncated: bool = False


def unified_rows(old: dict[str, str], new: dict[str, str]) -> DiffView:
    """A git-style diff between two code states, one row per line with both line numbers."""
    view = DiffView()
    old_no = new_no = 0
    for line in unified_diff(old, new).splitlines():
        if len(view.rows) >= MAX_DIFF_LINES:
            view.truncated = True
            break
        row, old_no, new_no = _row(line, old_no, new_no)
        view.added += row.kind == "add"
        view.removed += row.kind == "del"
        view.rows.append(row)
    return view


def _row(line: str, old_no: int, new_no: int) -> tuple[DiffRow, int, int]:
    if line.startswith("diff --git "):
        return DiffRow("file", line.split(" b/", 1)[-1]), 0, 0
    if line.startswith(("--- ", "+++ ", "new file", "deleted file", "\\ ")):
        return DiffRow("meta", line), old_no, new_no
    if (hunk := _HUNK.match(line)) is not None:
        return DiffRow("hunk", line), int(hunk.group(1)), int(hunk.group(2))
    if line.startswith("+"):
        return DiffRow("add", line[1:], new_no=new_no), old_no, new_no + 1
    if line.startswith("-"):
        return DiffRow("del", line[1:], old_no=old_no), old_no + 1, new_no
    return DiffRow("ctx", line[1:], old_no, new_no), old_no + 1, new_no + 1


def split_rows(old: dict[str, str], new: dict[str, str], *, context: int = 3) -> list[SplitRow]:
    """Side-by-side rows for every changed file: old on the left, new on the right."""
    rows: list[SplitRow] = []
    for path in sorted(set(old) | set(new)):
        if old.get(path) == new.get(path):
            continue
        rows.append(SplitRow("file", left=path, right=path))
        a, b = _lines(old.get(path)), _lines(new.get(path))
        matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
        for group in matcher.get_grouped_opcodes(context):
            rows.append(SplitRow("hunk", left=f"line {group[0][1] + 1}",
                                 right=f"line {group[0][3] + 1}"))
            for tag, i1, i2, j1, j2 in group:
                rows.extend(_pairs(tag, a, b, i1, i2, j1, j2))
        if len(rows) >= MAX_DIFF_LINES:
            break
    return rows[:MAX_DIFF_LINES]


def _pairs(tag: str, a: list[str], b: list[str], i1: int, i2: int, j1: int,
           j2: int) -> list[SplitRow]:
    pairs = []
    for k in range(max(i2 - i1, j2 - j1)):
        i, j = i1 + k, j1 + k
        has_left, has_right = i < i2, j < j2
        if tag == "replace" and not (has_left and has_right):
            tag = "delete" if has_left else "insert"
        pairs.append(SplitRow(tag, left=a[i] if has_left else "", right=b[j] if has_right else "",
                              left_no=i + 1 if has_left else None,
                              right_no=j + 1 if has_right else None))
    return pairs


def _lines(content: str | None) -> list[str]:
    return content.splitlines() if content else []


def code_lines(content: str, findings: dict[int, list[str]]) -> list[CodeLine]:
    """The file's lines, each with the safety findings reported on it."""
    return [CodeLine(number, text, tuple(findings.get(number, ())))
            for number, text in enumerate(content.splitlines() or [""], start=1)]
