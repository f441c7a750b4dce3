"""The shape of each role's reply, and its two readers (docs/engine.md, "The reply protocol
for files", and docs/llm.md, "Constrained replies").

Where the model's server can hold a reply to a JSON schema (autocoder.llm.structured), each
role's reply is a JSON object of the schema below; elsewhere it is the free text the prompts
describe (file blocks with `path=`, a verdict line). Both readers end in the same place: files
through `read_files` (every path through replies.normalize_path, as a block's is), and the
architect's, reflector's and reviewer's replies as the text their readers already take. A reply
may be either, whatever was asked: a server may ignore the option, a script may be JSON.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from typing import Any

from autocoder.engine.llm_port import CONTINUE, FIRST, LONGER, ModelCalls
from autocoder.engine.replies import (
    MAX_PATH_CHARS,
    Edit,
    ParsedReply,
    RejectedFile,
    normalize_path,
    parse_reply,
)
from autocoder.llm.types import CAPPED, DEADLINE, Message, ReplySchema

_TEXT = {"type": "string"}
# Servers' grammars let a raw newline or tab into a string, which strict JSON refuses: a file's
# content written that way is still meant as it reads.
_DECODER = json.JSONDecoder(strict=False)


def _object(properties: dict[str, object]) -> dict[str, object]:
    # Every property required and no other: what OpenAI's strict mode demands.
    return {"type": "object", "properties": properties, "required": list(properties),
            "additionalProperties": False}


# A path from the plugin root: it starts with a letter, digit or _ (not /, ., ~) and goes on
# with those, -, . and /. normalize_path still checks the rest (a/../b). Kept flat and without
# `\.`: llama.cpp's server crashed on the grammar made from a finer pattern that had one.
_PATH = {"type": "string", "pattern": "^[A-Za-z0-9_][A-Za-z0-9_./-]*$",
         "description": "The file's path from the plugin root."}
_FILE = _object({
    "path": _PATH,
    "content": {"type": "string", "description": "The whole file."},
})
# Files come first: a reply cut at its length limit keeps every file it finished.
_FILES = _object({
    "files": {"type": "array", "items": _FILE, "minItems": 1},
    "reason": {"type": "string", "description": "One sentence: what changed and why."},
})
_EDIT = _object({
    "path": _PATH,
    "search": {"type": "string",
               "description": "Lines copied exactly from the file, found there once."},
    "replace": {"type": "string", "description": "What replaces them."},
})
# From the second iteration the implementer may change files with edits (docs/engine.md).
_FILES_OR_EDITS = _object({
    "files": {"type": "array", "items": _FILE},
    "edits": {"type": "array", "items": _EDIT},
    "reason": {"type": "string", "description": "One sentence: what changed and why."},
})
_FILES_HINT = ('Reply with one JSON object instead of file blocks: "files" lists every file '
               'you write, each with its "path" (as the blocks above would name it) and its '
               'whole "content"; "reason" says in one sentence what changed.')

SCHEMAS: dict[str, ReplySchema] = {
    "implementer": ReplySchema("implementer_files", _FILES, _FILES_HINT),
    "implementer_edits": ReplySchema("implementer_changes", _FILES_OR_EDITS, (
        'Reply with one JSON object instead of blocks: "files" lists files you send whole '
        '("path" and whole "content"), "edits" the edits ("path", "search": lines copied '
        'exactly from the file, "replace": what replaces them), "reason" what changed, in '
        'one sentence.')),
    "tester": ReplySchema("tester_files", _FILES, _FILES_HINT),
    "architect": ReplySchema("architect_plan", _object({
        "steps": {"type": "array", "items": _TEXT, "minItems": 1,
                  "description": "The plan, one step per item."},
    }), 'Reply with one JSON object: "steps" lists the plan, one short step per item.'),
    "reflector": ReplySchema("reflector_findings", _object({
        "what_went_wrong": _TEXT, "why": _TEXT, "what_to_change": _TEXT,
    }), 'Reply with one JSON object holding the three sections: "what_went_wrong", "why" and '
        '"what_to_change".'),
    "reviewer": ReplySchema("reviewer_verdict", _object({
        "reasons": {"type": "string", "description": "What you found, briefly."},
        "verdict": {"type": "string", "enum": ["approve", "request_changes", "unsure"]},
    }), 'Reply with one JSON object: "reasons" (what you found) and "verdict" (approve, '
        'request_changes or unsure).'),
}


@dataclasses.dataclass(frozen=True)
class Answer:
    """A role's reply, whole or said to be cut: `cut` when it still stops short after being
    continued (or asked again with more room), `asked` how it was completed, in order
    ("continue", "longer"). Never handed on as complete when cut (docs/engine.md)."""

    text: str
    cut: bool = False
    asked: tuple[str, ...] = ()


# Told to a model whose reply stopped at its length limit (docs/engine.md, "The reply protocol
# for files"); its continuation is joined to what it wrote.
CONTINUE_ASK = ("Your reply above stopped at its length limit. Continue it from exactly where "
                "it stopped: do not repeat anything, do not start again, no introduction. If it "
                "stopped inside a file block, go on with that file's content (do not open the "
                "block again) and close the block when the file ends.")
MAX_COMPLETIONS = 2  # continuations (or retries with more room) of one reply
_FILE_ROLES = ("implementer", "tester")
_OVERLAP_MIN, _OVERLAP_MAX = 12, 400


def ask(llm: ModelCalls, role: str, messages: list[Message], *, package: str = "",
        edits: bool = False, purpose: str = FIRST) -> Answer:
    """The role's reply, asked for in its shape (JSON where the server holds replies to a
    schema, free text elsewhere); read it with `read_files` or `as_text`. `edits`: the
    implementer may answer with edits instead of whole files; `purpose` is why it is asked.

    A reply that stops at its length limit, or leaves a file block or a JSON object open, is
    completed: free text is continued (the model is shown what it wrote and asked to go on,
    and the two are joined), a JSON reply is asked for again with twice the room, then three
    times where the context window has that room, as a JSON object cannot be continued in a
    new message. At most MAX_COMPLETIONS times; a reply still short is an Answer with `cut`."""
    schema = schema_for(role, package=package, edits=edits)
    text = llm.complete(role, messages, schema=schema, purpose=purpose)
    asked: list[str] = []
    while _stops_short(role, text, llm.last_finish_reason) and len(asked) < MAX_COMPLETIONS:
        if _json_start(text) is not None:
            room = asked.count(LONGER) + 2
            if llm.reply_cap(role, messages, room=room) <= llm.reply_cap(role, messages,
                                                                        room=room - 1):
                break  # the context window has no more room to give
            asked.append(LONGER)
            text = llm.complete(role, messages, schema=schema, purpose=LONGER, room=room)
            continue
        asked.append(CONTINUE)
        more = llm.complete(role, [*messages, Message("assistant", text),
                                   Message("user", CONTINUE_ASK)], purpose=CONTINUE)
        text = joined(text, more)
    return Answer(text=text, cut=_stops_short(role, text, llm.last_finish_reason,
                                              deadline=True), asked=tuple(asked))


def _stops_short(role: str, text: str, finish: str, *, deadline: bool = False) -> bool:
    """Whether `text` is not a whole reply: the model stopped at its cap (or, with
    `deadline`, at the run's deadline, where asking again cannot help), or a JSON object or
    (for the roles that write files) a file block is left open."""
    if finish == CAPPED or (deadline and finish == DEADLINE):
        return True
    if _json_start(text) is not None:
        return _whole_object(text) is None
    return role in _FILE_ROLES and any(r.reason.startswith("unterminated block")
                                       for r in parse_reply(text).rejected)


def joined(head: str, tail: str) -> str:
    """A reply and its continuation as one text: the continuation's repeat of the reply's
    last characters, or of the file block's opening fence, is left out."""
    lines = tail.split("\n", 1)
    reopened = lines[0].strip()
    if reopened.startswith(("```", "~~~")) and "path=" in reopened and reopened in head:
        tail = lines[1] if len(lines) > 1 else ""
    longest = min(len(head), len(tail), _OVERLAP_MAX)
    for size in range(longest, _OVERLAP_MIN - 1, -1):
        if head.endswith(tail[:size]):
            return head + tail[size:]
    return head + tail


def schema_for(role: str, *, package: str = "", edits: bool = False) -> ReplySchema | None:
    """The role's schema; with the plugin's `package`, its paths narrowed to where the role
    writes (a small model held to them cannot name a file elsewhere)."""
    shape = SCHEMAS["implementer_edits"] if edits and role == "implementer" else SCHEMAS.get(role)
    where = _WRITES.get(role)
    if shape is None or where is None or not package.isidentifier():
        return shape
    pattern = where.format(package=package)
    return dataclasses.replace(shape, schema=_narrowed(shape.schema, pattern))


# Where each role writes, as a path pattern (flat, as _PATH; a dot as [.], since llama.cpp's
# grammar made from a pattern turns `\.` into an escape its parser does not know).
# The implementer may mend the tester's files, never the acceptance tests or the harness (a
# small model held to a looser pattern sent an empty tests/test_acceptance.py).
_WRITES = {
    "implementer": ("^({package}/[A-Za-z0-9_./-]+|tests/test_generated_[A-Za-z0-9_]+[.]py"
                    "|README[.]md|plugin[.]toml)$"),
    "tester": "^tests/test_generated_[A-Za-z0-9_]+[.]py$",
}


def _narrowed(node: Any, pattern: str) -> Any:
    """A copy of a schema whose every path property has `pattern`."""
    if isinstance(node, list):
        return [_narrowed(item, pattern) for item in node]
    if not isinstance(node, dict):
        return node
    if node is _PATH:
        return {**node, "pattern": pattern}
    return {key: _narrowed(value, pattern) for key, value in node.items()}


def read_files(text: str) -> ParsedReply:
    """Files, rejected files and the model's words from an implementer's or tester's reply,
    a JSON object or file blocks. Never raises."""
    start = _json_start(text)
    if start is None:
        return parse_reply(text)
    try:
        return _files_from_json(text, start)
    except Exception as exc:  # noqa: BLE001 - untrusted input must not crash a run
        return ParsedReply(files={}, rejected=(RejectedFile("", f"unreadable reply: {exc}"),),
                           prose="")


def as_text(role: str, text: str) -> str:
    """The architect's, reflector's or reviewer's reply as the text the prompts ask for (a
    JSON reply rendered so; free text as it came)."""
    data = _whole_object(text)
    if data is None:
        return text
    if role == "architect" and isinstance(data.get("steps"), list):
        steps = [str(step).strip() for step in data["steps"] if str(step).strip()]
        return "\n".join(f"{number}. {step}" for number, step in enumerate(steps, 1))
    if role == "reflector":
        return "\n".join(f"{label}: {str(data.get(key) or '').strip()}" for key, label in (
            ("what_went_wrong", "What went wrong"), ("why", "Why"),
            ("what_to_change", "What to change")))
    if role == "reviewer" and data.get("verdict"):
        return f"{str(data.get('reasons') or '').strip()}\n\nVERDICT: {data['verdict']}"
    return text


def _json_start(text: str) -> int | None:
    """Where a JSON reply's object starts ({ first, or inside one ```json fence), else None."""
    if not isinstance(text, str):
        return None
    stripped = text.lstrip()
    if stripped.startswith("{"):
        return len(text) - len(stripped)
    if stripped.startswith("```json") or stripped.startswith("~~~json"):
        brace = text.find("{")
        return brace if brace >= 0 else None
    return None


def _whole_object(text: str) -> dict[str, Any] | None:
    start = _json_start(text)
    if start is None:
        return None
    try:
        data, _ = _DECODER.raw_decode(text, start)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def _files_from_json(text: str, start: int) -> ParsedReply:
    data = _whole_object(text)
    if data is not None:
        items, changes = data.get("files"), data.get("edits")
        return _parsed(items if isinstance(items, list) else [],
                       changes if isinstance(changes, list) else [],
                       str(data.get("reason") or ""), cut=None)
    items, cut = _finished_items(text, start)
    return _parsed(items, [], "", cut=cut)


def _entries(items: list[Any], keys: tuple[str, ...], what: str,
             rejected: list[RejectedFile]) -> Iterator[tuple[str, dict[str, str]]]:
    """(normalized path, item) for each item with `keys` as text and a path inside the
    plugin root; the others are refused with the reason."""
    for item in items:
        if not (isinstance(item, dict) and all(isinstance(item.get(k), str) for k in keys)):
            rejected.append(RejectedFile("", f"{what} without {', '.join(keys)} as text"))
            continue
        path, why = normalize_path(item["path"])
        if why:
            rejected.append(RejectedFile(item["path"][:MAX_PATH_CHARS], why))
            continue
        yield path, item


def _parsed(items: list[Any], changes: list[Any], reason: str, *,
            cut: str | None) -> ParsedReply:
    files: dict[str, str] = {}
    rejected: list[RejectedFile] = []
    for path, item in _entries(items, ("path", "content"), "a file", rejected):
        content = item["content"]
        files.pop(path, None)  # the later one wins, as with blocks
        files[path] = content if not content or content.endswith("\n") else content + "\n"
    if cut is not None:
        rejected.append(RejectedFile(cut, "unterminated: the reply stopped inside "
                                          f"{cut or 'a file'}"))
    edits = tuple(Edit(path, item["search"], item["replace"]) for path, item in _entries(
        changes, ("path", "search", "replace"), "an edit", rejected))
    return ParsedReply(files=files, rejected=tuple(rejected), prose=reason.strip(), edits=edits)


def _finished_items(text: str, start: int) -> tuple[list[Any], str | None]:
    """A reply cut short (at its length limit): the files it finished, and the path of the one
    it was writing ("" when unknown; None when it was between files)."""
    decoder = _DECODER
    key = text.find('"files"', start)
    bracket = text.find("[", key) if key >= 0 else -1
    if bracket < 0:
        return [], None
    items: list[Any] = []
    at = bracket + 1
    while True:
        while at < len(text) and text[at] in " \t\r\n,":
            at += 1
        if at >= len(text) or text[at] == "]":
            return items, None
        try:
            item, at = decoder.raw_decode(text, at)
        except ValueError:
            return items, _path_of_unfinished(text[at:])
        items.append(item)


def _path_of_unfinished(rest: str) -> str:
    marker = rest.find('"path"')
    if marker < 0:
        return ""
    try:
        colon = rest.index(":", marker)
        quote = rest.index('"', colon)
        value, _ = _DECODER.raw_decode(rest, quote)
    except ValueError:
        return ""
    return value[:MAX_PATH_CHARS] if isinstance(value, str) else ""
