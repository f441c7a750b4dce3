"""What a README says the plugin has: the command names and setting names it mentions, read the
way a person reads them (docs/engine.md, "The quality pipeline", the docs stage).

Command names are kebab-case words such as `generate-schedule`, or any name in a heading of the
Commands section. Ordinary hyphenated words of the text ("first-fit", "read-only") are never
taken for commands: a bare word counts only next to the word "command". The code blocks count
only where they call a command (`on_command("x", ...)`, the portal's tools API address) or read
a setting (`api.settings["x"]`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# A fenced block, also one indented in a list item (the generated README's curl example).
FENCE = re.compile(r"^[ \t]*```[^\n]*\n.*?^[ \t]*```[ \t]*$", re.M | re.S)
_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$", re.M)
_SPAN = re.compile(r"`([^`\n]+)`")
_TOKEN = re.compile(r"`([^`\n]+)`|([A-Za-z0-9_][A-Za-z0-9_-]*)|(\S)")
KEBAB = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)+")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
_IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]{0,63}|[A-Z_][A-Z0-9_]{0,63}")  # snake, SHOUTED
_CALLS = (re.compile(r"on_command\(\s*[\"']([^\"'\n]+)[\"']"),
          re.compile(r"/api/tools/[^/\s]+/[^/\s]+/([A-Za-z0-9_-]+)"),
          re.compile(r"/commands/([A-Za-z0-9_-]+)"),
          re.compile(r"[\"']command[\"']\s*:\s*[\"']([A-Za-z0-9_-]+)[\"']"))
_SETTING_READS = re.compile(r"settings(?:\[|\.get\()\s*[\"']([A-Za-z_][A-Za-z0-9_]*)[\"']")
# Headings that are section titles, not commands; tools a README tells people to run.
SECTION_WORDS = frozenset({
    "commands", "examples", "example", "installing", "install", "usage", "settings",
    "constraints", "schedule", "api", "form", "team-tool", "limits", "hosts", "development",
    "tests", "license", "notes", "errors", "inputs", "outputs", "input", "output"})
_TOOLS = frozenset({"curl", "wget", "pip", "pip3", "python", "python3", "pytest", "sh", "bash",
                    "git", "http", "manage.py"})
_LIST_JOINS = frozenset({",", "and", "or", "&"})
# Words a sentence about settings uses for what a setting has, not for one of them.
_SETTING_WORDS = frozenset({"api", "settings", "setting", "secret", "name", "description",
                            "true", "false", "null"})


@dataclass(frozen=True)
class Mentions:
    commands: frozenset[str]  # every name the README uses as a command
    settings: frozenset[str]  # every name the README uses as a setting
    prose: str  # the README without its fenced code blocks: what "describes" something


def read_mentions(readme: str) -> Mentions:
    prose = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), readme)
    commands = _heading_commands(prose) | _span_commands(prose) | _context_commands(prose)
    commands |= {name for pattern in _CALLS for name in pattern.findall(readme)}
    settings = _sentence_settings(prose) | _section_settings(prose)
    settings |= set(_SETTING_READS.findall(readme))
    return Mentions(frozenset(commands), frozenset(settings), prose)


def _heading_commands(prose: str) -> set[str]:
    """A heading that is a command's name in backticks, a bare kebab-case name, or, under a
    heading with the word "command", any name it starts with."""
    found: set[str] = set()
    section_level = 0  # the level of the Commands heading we are under; 0 when none
    for match in _HEADING.finditer(prose):
        level, text = len(match.group(1)), match.group(2).strip()
        if section_level and level <= section_level:
            section_level = 0
        lead = _heading_lead(text, bare_any=bool(section_level)) if level > 1 else None
        if lead and lead.lower() not in SECTION_WORDS:
            found.add(lead)
        if not lead and re.search(r"\bcommands?\b", text, re.I):
            section_level = level
    return found


def _heading_lead(text: str, *, bare_any: bool) -> str | None:
    quoted = re.match(r"`([^`]+)`\s*(?:$|[:(—–-]|\s-\s)", text)
    if quoted:
        name = quoted.group(1).strip()
        return name if _NAME.fullmatch(name) else None
    word = re.split(r"\s*(?::|\s-\s|\s—\s|\s–\s|\()", text, maxsplit=1)[0].strip()
    if " " in word or not _NAME.fullmatch(word):
        return None
    return word if KEBAB.fullmatch(word) or (bare_any and word.islower()) else None


def _span_commands(prose: str) -> set[str]:
    return {span.strip() for span in _SPAN.findall(prose) if _kebab_command(span.strip())}


def _kebab_command(name: str) -> bool:
    """A kebab-case code span that reads as a name: not a header (`x-api-key`, `content-type`),
    not an encoding or a date format (`utf-8`, `iso-8601`)."""
    if not KEBAB.fullmatch(name) or name.startswith("x-"):
        return False
    parts = name.split("-")
    return not any(part.isdigit() for part in parts) and name not in (
        "content-type", "user-agent", "content-length")


def _context_commands(prose: str) -> set[str]:
    """Names next to the word "command": "the `publish` command", "the export-calendar
    command", "commands: `a`, `b` and `c`", "the command called `x`"."""
    tokens = [(m.group(1), m.group(2), m.group(3)) for m in _TOKEN.finditer(prose)]
    found: set[str] = set()
    for index, (_, word, _) in enumerate(tokens):
        if not word or word.lower() not in ("command", "commands"):
            continue
        found |= _names_listed(tokens, index - 1, step=-1)
        after = index + 1
        while after < len(tokens) and (tokens[after][2] == ":" or (
                tokens[after][1] or "").lower() in ("called", "named")):
            after += 1
        found |= _names_listed(tokens, after, step=1)
    return found


def _names_listed(tokens: list[tuple[str | None, str | None, str | None]], start: int, *,
                  step: int) -> set[str]:
    found: set[str] = set()
    index = start
    while 0 <= index < len(tokens):
        name = _command_token(tokens[index])
        if name is None:
            break
        found.add(name)
        index += step
        if 0 <= index < len(tokens) and ((tokens[index][1] or tokens[index][2] or "").lower()
                                         in _LIST_JOINS):
            index += step
        else:
            break
    return found


def _command_token(token: tuple[str | None, str | None, str | None]) -> str | None:
    span, word, _ = token
    if span is not None:
        name = span.strip()
        return name if _NAME.fullmatch(name) and name.lower() not in _TOOLS else None
    return word if word and KEBAB.fullmatch(word) else None


def _sentences(prose: str) -> list[str]:
    return [part for block in re.split(r"\n\s*\n|\n(?=\s*(?:[-*+]|\d+\.|\|)\s)", prose)
            for part in re.split(r"(?<=[.!?])\s+(?=[A-Z`*])", block) if part.strip()]


def _sentence_settings(prose: str) -> set[str]:
    """Names in code spans of a sentence about settings ("the team enters its settings:
    `channel`, `api_key`")."""
    found: set[str] = set()
    for sentence in _sentences(prose):
        if re.search(r"\bsettings?\b", sentence, re.I):
            found |= {span.strip() for span in _SPAN.findall(sentence)
                      if _IDENTIFIER.fullmatch(span.strip())
                      and span.strip().lower() not in _SETTING_WORDS}
    return found


def _section_settings(prose: str) -> set[str]:
    """The first name of each list item or table row under a heading about settings."""
    found: set[str] = set()
    inside = 0
    for line in prose.splitlines():
        heading = _HEADING.match(line)
        if heading:
            level = len(heading.group(1))
            about = re.search(r"\bsettings?\b", heading.group(2), re.I)
            inside = level if about else (0 if inside and level <= inside else inside)
            continue
        item = re.match(r"\s*(?:[-*+]|\d+\.|\|)\s*(?:`([^`]+)`|\*\*([^*]+)\*\*)", line)
        if inside and item:
            name = (item.group(1) or item.group(2)).strip()
            if _IDENTIFIER.fullmatch(name) and name.lower() not in _SETTING_WORDS:
                found.add(name)
    return found
