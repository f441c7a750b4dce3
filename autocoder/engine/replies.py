"""The reply protocol for files (docs/engine.md, "The reply protocol for files"), merging
changes, hashing and diffing code states.

A file travels in a fenced block whose opening fence carries a `path=` attribute:

    ```python path=weekly_scheduler/plugin.py
    ...the whole file...
    ```

Model output is untrusted text: `parse_reply` never raises, and every path is checked so that a
reply can only ever name files inside the plugin root.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass

from autocoder.engine.scaffold import ACCEPTANCE_TEST_PATH

MAX_PATH_CHARS = 200
MAX_FILE_CHARS = 256_000
MAX_FILES = 200

# An opening or closing fence: up to 3 spaces, then 3+ backticks or tildes, then an info string.
_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_PATH_ATTR = re.compile(r"""(?:^|\s)path\s*=\s*(?:"(?P<dq>[^"]*)"|'(?P<sq>[^']*)'|(?P<bare>\S+))""")
_DRIVE = re.compile(r"^[A-Za-z]:")
_EDIT_WORD = re.compile(r"(?:^|\s)edit(?:\s|$)")
_SEARCH = re.compile(r"^<{5,9} ?SEARCH\s*$")
_DIVIDER = re.compile(r"^={5,9}\s*$")
_REPLACE = re.compile(r"^>{5,9} ?REPLACE\s*$")


@dataclass(frozen=True)
class RejectedFile:
    path: str
    reason: str


@dataclass(frozen=True)
class Edit:
    """Replace `search` (text of the file as it is, found exactly once) by `replace`."""

    path: str
    search: str
    replace: str


@dataclass(frozen=True)
class ParsedReply:
    files: dict[str, str]
    rejected: tuple[RejectedFile, ...]
    prose: str  # the text outside the file blocks: the model's reasoning
    edits: tuple[Edit, ...] = ()  # edit blocks (docs/engine.md), applied by `apply_edits`


def normalize_path(raw: str) -> tuple[str, str]:
    """(normalized path, "") when `raw` names a file inside the plugin root, else ("", reason)."""
    path = raw.strip()
    if not path:
        return "", "empty path"
    if len(path) > MAX_PATH_CHARS:
        return "", f"path is longer than {MAX_PATH_CHARS} characters"
    if "\x00" in path or any(ord(ch) < 32 or ord(ch) == 127 for ch in path):
        return "", "path contains control characters"
    if "\\" in path:
        return "", "path contains a backslash (use / between folders)"
    if path.startswith("/") or _DRIVE.match(path):
        return "", "absolute paths are not allowed (paths are relative to the plugin root)"
    if path.startswith("~"):
        return "", "home-directory paths are not allowed (paths are relative to the plugin root)"
    if path.endswith("/"):
        return "", "path names a folder, not a file"
    parts = [part for part in path.split("/") if part not in ("", ".")]
    if ".." in parts:
        return "", "path escapes the plugin root (..)"
    if not parts:
        return "", "empty path"
    return "/".join(parts), ""


def parse_reply(text: str) -> ParsedReply:
    """Files, rejected blocks and prose from a model reply. Never raises."""
    try:
        return _parse(text if isinstance(text, str) else str(text or ""))
    except Exception as exc:  # noqa: BLE001 - untrusted input must not crash a run
        return ParsedReply(files={}, rejected=(RejectedFile("", f"unreadable reply: {exc}"),),
                           prose="")


@dataclass
class _Block:
    raw_path: str
    fence_char: str
    fence_len: int
    indent: int
    lines: list[str]
    depth: int = 0  # nested fences inside the block (a README with code examples)
    edit: bool = False  # an edit block: SEARCH/REPLACE hunks, not the whole file


def _parse(text: str) -> ParsedReply:
    files: dict[str, str] = {}
    edits: list[Edit] = []
    rejected: list[RejectedFile] = []
    prose: list[str] = []
    block: _Block | None = None
    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        fence = _FENCE.match(line)
        if block is None:
            path = _path_attr(fence)
            if fence is None or path is None:
                prose.append(line)
            else:
                block = _open_block(fence, path)
            continue
        if fence and _closes(block, fence):
            if block.depth:
                block.depth -= 1
                block.lines.append(line)
            else:
                _finish(block, files, edits, rejected)
                block = None
            continue
        new_path = _path_attr(fence)
        if fence and new_path is not None and not block.depth and _same_fence(block, fence, True):
            # A new file starts before this one was closed: keep the new one, reject the old.
            rejected.append(_unterminated(block))
            block = _open_block(fence, new_path)
            continue
        if fence and fence["info"].strip() and _same_fence(block, fence, False):
            block.depth += 1
        block.lines.append(line)
    if block is not None:
        rejected.append(_unterminated(block))
    # Removing a block leaves the blank lines around it; one blank line is enough.
    text_outside = re.sub(r"\n[ \t]*\n(?:[ \t]*\n)+", "\n\n", "\n".join(prose))
    return ParsedReply(files=files, rejected=tuple(rejected), prose=text_outside.strip(),
                       edits=tuple(edits))


def _path_attr(fence: re.Match[str] | None) -> str | None:
    if fence is None:
        return None
    info = fence["info"]
    if fence["fence"][0] == "`" and "`" in info:
        return None  # not a fence at all (CommonMark): inline code at the start of a line
    found = _PATH_ATTR.search(info)
    if found is None:
        return None
    return next(value for value in (found["dq"], found["sq"], found["bare"]) if value is not None)


def _open_block(fence: re.Match[str], raw_path: str) -> _Block:
    rest = _PATH_ATTR.sub(" ", fence["info"], count=1)
    return _Block(raw_path=raw_path, fence_char=fence["fence"][0], fence_len=len(fence["fence"]),
                  indent=len(fence["indent"]), lines=[], edit=bool(_EDIT_WORD.search(rest)))


def _closes(block: _Block, fence: re.Match[str]) -> bool:
    return (not fence["info"].strip() and fence["fence"][0] == block.fence_char
            and len(fence["fence"]) >= block.fence_len)


def _same_fence(block: _Block, fence: re.Match[str], at_least: bool) -> bool:
    if fence["fence"][0] != block.fence_char:
        return False
    size = len(fence["fence"])
    return size >= block.fence_len if at_least else size == block.fence_len


def _finish(block: _Block, files: dict[str, str], edits: list[Edit],
            rejected: list[RejectedFile]) -> None:
    path, reason = normalize_path(block.raw_path)
    if reason:
        rejected.append(RejectedFile(block.raw_path[:MAX_PATH_CHARS], reason))
        return
    lines = [_dedent(line, block.indent) for line in block.lines]
    if block.edit:
        hunks, problem = _hunks(lines)
        if problem:
            rejected.append(RejectedFile(path, problem))
        edits.extend(Edit(path, search, replace) for search, replace in hunks)
        return
    files.pop(path, None)  # the later block wins, and moves to the end
    files[path] = "\n".join(lines) + "\n" if lines else ""


def _hunks(lines: list[str]) -> tuple[list[tuple[str, str]], str]:
    """The (search, replace) pairs of an edit block, and what was wrong with it ("" if all)."""
    hunks: list[tuple[str, str]] = []
    search: list[str] | None = None
    replace: list[str] | None = None
    for line in lines:
        if _SEARCH.match(line) and search is None:
            search = []
        elif _DIVIDER.match(line) and search is not None and replace is None:
            replace = []
        elif _REPLACE.match(line) and search is not None and replace is not None:
            hunks.append(("\n".join(search) + "\n", "\n".join(replace) + "\n" if replace else ""))
            search = replace = None
        elif replace is not None:
            replace.append(line)
        elif search is not None:
            search.append(line)
        elif line.strip():
            return hunks, "an edit block holds only SEARCH/=======/REPLACE edits"
    if search is not None or not hunks:
        return hunks, "an edit block needs whole edits: SEARCH, =======, then REPLACE lines"
    return hunks, ""


EDIT_MISSED = "an edit's SEARCH text"


def apply_edits(current: dict[str, str], files: dict[str, str],
                edits: tuple[Edit, ...]) -> tuple[dict[str, str], tuple[RejectedFile, ...]]:
    """`files` (whole files of a reply) with the files its `edits` change, each edit applied to
    the file as the reply leaves it; an edit whose text is not found exactly once is refused
    with the reason, and the file's other edits still apply."""
    changed = dict(files)
    rejected: list[RejectedFile] = []
    for edit in edits:
        text = changed.get(edit.path, current.get(edit.path))
        if text is None:
            rejected.append(RejectedFile(edit.path, "an edit names a file that does not exist "
                                                    "(send a new file whole)"))
            continue
        found = text.count(edit.search) if edit.search.strip() else 0
        if found != 1:
            where = ("is not in the file as it is now" if found == 0 else
                     f"appears {found} times in the file (include more lines)")
            rejected.append(RejectedFile(edit.path, f"{EDIT_MISSED} {where}"))
            continue
        changed[edit.path] = text.replace(edit.search, edit.replace, 1)
    return changed, tuple(rejected)


def _dedent(line: str, indent: int) -> str:
    # A fence indented by N spaces (inside a list) has its content indented by up to N spaces too.
    strip = len(line) - len(line.lstrip(" "))
    return line[min(strip, indent):]


def _unterminated(block: _Block) -> RejectedFile:
    path, _ = normalize_path(block.raw_path)
    shown = path or block.raw_path[:MAX_PATH_CHARS]
    return RejectedFile(shown, f"unterminated block for {shown} (no closing fence)")


# -- merging -------------------------------------------------------------------------------------

_PROTECTED_REASONS = {
    ACCEPTANCE_TEST_PATH: "acceptance tests are read-only",
    "plugin.toml": "plugin.toml changes only through a permissions request",
}


def protected_reason(path: str) -> str:
    return _PROTECTED_REASONS.get(path, "this file is fixed by the scaffold and read-only")


def merge_files(current: dict[str, str], changes: dict[str, str], *,
                protected: frozenset[str]) -> tuple[dict[str, str], tuple[RejectedFile, ...]]:
    """Apply `changes` to `current`; a change whose content is exactly "" deletes the file.

    Protected paths, unsafe paths, oversized files and files beyond MAX_FILES are rejected with a
    reason; everything else is applied. The result is a new dict sorted by path.
    """
    merged = dict(current)
    rejected: list[RejectedFile] = []
    for raw_path, content in changes.items():
        path, reason = normalize_path(raw_path)
        if not reason:
            reason = _change_problem(path, content, merged, protected)
        if reason:
            rejected.append(RejectedFile(path or raw_path[:MAX_PATH_CHARS], reason))
        elif content == "":
            merged.pop(path, None)
        else:
            merged[path] = content
    return dict(sorted(merged.items())), tuple(rejected)


def _change_problem(path: str, content: object, merged: dict[str, str],
                    protected: frozenset[str]) -> str:
    if path in protected:
        return protected_reason(path)
    if not isinstance(content, str):
        return "file content must be text"
    if len(content) > MAX_FILE_CHARS:
        return f"file is larger than {MAX_FILE_CHARS} characters"
    if content and path not in merged and len(merged) >= MAX_FILES:
        return f"a plugin may have at most {MAX_FILES} files"
    return ""


# -- hashing and diffing -------------------------------------------------------------------------


def code_hash(files: dict[str, str]) -> str:
    """A stable sha256 of a code state: same paths and contents, same hash, whatever the order."""
    digest = hashlib.sha256()
    for path in sorted(files):
        for part in (path, files[path]):
            data = part.encode("utf-8", "surrogatepass")
            # Length prefixes keep ("ab", "c") and ("a", "bc") apart.
            digest.update(f"{len(data)}:".encode())
            digest.update(data)
    return digest.hexdigest()


def unified_diff(old: dict[str, str], new: dict[str, str]) -> str:
    """A git-style diff of every file that changed, added or was deleted, sorted by path."""
    out: list[str] = []
    for path in sorted(set(old) | set(new)):
        if old.get(path) != new.get(path):
            out.extend(_file_diff(path, old.get(path), new.get(path)))
    return "\n".join(out) + "\n" if out else ""


def diff_stats(old: dict[str, str], new: dict[str, str]) -> tuple[int, int]:
    """(lines added, lines removed) between two code states."""
    added = removed = 0
    for path in set(old) | set(new):
        a, b = _lines(old.get(path)), _lines(new.get(path))
        if a == b:
            continue
        matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag != "equal":
                removed += i2 - i1
                added += j2 - j1
    return added, removed


def _file_diff(path: str, before: str | None, after: str | None) -> Iterator[str]:
    yield f"diff --git a/{path} b/{path}"
    if before is None:
        yield "new file mode 100644"
    elif after is None:
        yield "deleted file mode 100644"
    lines = list(difflib.unified_diff(
        _lines(before), _lines(after),
        fromfile="/dev/null" if before is None else f"a/{path}",
        tofile="/dev/null" if after is None else f"b/{path}",
        lineterm="", n=3,
    ))
    yield from lines


_NO_NEWLINE = "\n\\ No newline at end of file"


def _lines(content: str | None) -> list[str]:
    # The last line without a newline carries git's marker, so "x" and "x\n" differ in a diff.
    if not content:
        return []
    lines = content.split("\n")
    if lines[-1] == "":
        return lines[:-1]
    lines[-1] += _NO_NEWLINE
    return lines
