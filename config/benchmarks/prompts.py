"""What a run's prompts cost (`manage.py prompt_bench`, docs/llm.md "What each role is told"):
the prompt tokens each role receives in each attempt of a scripted run, and the share of each
prompt taken by each of its sections.

Tokens are counted as characters / 4, rounded up: about what the tokenizers of code models
give for English and Python, and the same count for every prompt, so two runs (or two versions
of the prompts) compare exactly. A prompt is split into sections by what it says: the system
message into its paragraphs of instructions, contract, reply protocol, testing strategy and
quality bar; the user message at each `# ` heading.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, NotRequired, TypedDict

CHARS_PER_TOKEN = 4
# The user message's sections, by the start of their heading (autocoder/engine/prompting.py).
USER_SECTIONS = (
    ("# The request", "request"), ("# Guidance", "guidance"), ("# The plan so far", "plan"),
    ("# Plan", "plan"), ("# Change of course", "escape"), ("# Earlier approaches", "approaches"),
    ("# Lessons", "lessons"), ("# Reference", "reference"), ("# Current files", "files"),
    ("# Files", "files"), ("# What went wrong", "failures"),
    ("# What the tests and the safety gate found", "checks"), ("# Your task", "task"),
)
# The system message's parts, by the first words of a paragraph; the rest is "instructions".
SYSTEM_SECTIONS = (
    ("The plugin contract", "contract"), ("The plugin:", "contract"),
    ("How to send files", "protocol"), ("Rules for file blocks", "protocol"),
    ("How the candidate is judged", "bar"), ("The requester chose the", "testing"),
    ("You may also change a file with edits", "edits"),
)
_HEADING = re.compile(r"^# ", re.M)


def tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


@dataclass(frozen=True)
class Prompt:
    """One call's prompt as sent: its role, attempt and purpose, and its sections' tokens."""

    role: str
    attempt: int
    purpose: str
    sections: dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.sections.values())


def sections_of(messages: Iterable[dict[str, Any]]) -> dict[str, int]:
    """The tokens of each section of one call's messages."""
    found: dict[str, int] = {}
    for message in messages:
        content = str(message.get("content", ""))
        parts = (_system_parts(content) if message.get("role") == "system"
                 else _user_parts(content))
        for name, text in parts:
            found[name] = found.get(name, 0) + tokens(text)
    return found


def _user_parts(content: str) -> list[tuple[str, str]]:
    """The user message cut at each `# ` heading outside a fenced block (a file's own
    headings and comments stay in the file's section)."""
    pieces: list[str] = []
    fence = ""
    for line in content.splitlines(keepends=True):
        marker = re.match(r"^ {0,3}(`{3,}|~{3,})", line)
        if marker and not fence:
            fence = marker.group(1)
        elif marker and line.strip() == fence[0] * len(line.strip()) and \
                len(line.strip()) >= len(fence):
            fence = ""
        if not fence and _HEADING.match(line) or not pieces:
            pieces.append(line)
        else:
            pieces[-1] += line
    named = []
    for piece in pieces:
        # Instructions folded into the first user message (a model that drops system ones).
        if not piece.startswith("# "):
            named += _system_parts(piece)
            continue
        name = next((n for head, n in USER_SECTIONS if piece.startswith(head)), "other")
        named.append((name, piece))
    return named


def _system_parts(content: str) -> list[tuple[str, str]]:
    """A paragraph that starts with a known head starts its section; one that goes on a list
    or a code block stays in it; any other paragraph is the role's instructions."""
    named: list[tuple[str, str]] = []
    current, in_fence = "instructions", False
    for paragraph in re.split(r"(?<=\n)\n", content):
        first = paragraph.lstrip("\n")
        started = next((n for head, n in SYSTEM_SECTIONS if first.startswith(head)), None)
        if started is not None:
            current = started
        elif not in_fence and not first.startswith(("- ", "  ", "```")):
            current = "instructions"
        fences = sum(1 for line in paragraph.splitlines() if line.lstrip().startswith("```"))
        in_fence = in_fence != (fences % 2 == 1)
        named.append((current, paragraph))
    return named


class CallFigures(TypedDict):
    role: str
    attempt: int
    purpose: str
    prompt_tokens: int
    sections: dict[str, int]


class BenchFigures(TypedDict):
    """What `prompt_bench` prints (`reference` and `run_id`: the command adds them)."""

    spec: str
    status: str
    attempts: int
    prompt_tokens: int
    by_role: dict[str, dict[str, int]]
    section_shares: dict[str, float]
    calls: list[CallFigures]
    reference: NotRequired[str]
    run_id: NotRequired[int]


@dataclass
class Bench:
    """The prompts of one run, and what they add up to."""

    spec: str
    status: str
    attempts: int
    prompts: list[Prompt] = field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(p.total for p in self.prompts)

    def by_role(self) -> dict[str, dict[int, int]]:
        table: dict[str, dict[int, int]] = {}
        for prompt in self.prompts:
            row = table.setdefault(prompt.role, {})
            row[prompt.attempt] = row.get(prompt.attempt, 0) + prompt.total
        return table

    def shares(self) -> dict[str, float]:
        """Each section's share of all the run's prompt tokens."""
        sums: dict[str, int] = {}
        for prompt in self.prompts:
            for name, count in prompt.sections.items():
                sums[name] = sums.get(name, 0) + count
        total = self.total or 1
        return {name: round(count / total, 3)
                for name, count in sorted(sums.items(), key=lambda kv: -kv[1])}

    def as_dict(self) -> BenchFigures:
        return {
            "spec": self.spec, "status": self.status, "attempts": self.attempts,
            "prompt_tokens": self.total,
            "by_role": {role: {str(n): t for n, t in sorted(row.items())}
                        for role, row in self.by_role().items()},
            "section_shares": self.shares(),
            "calls": [{"role": p.role, "attempt": p.attempt, "purpose": p.purpose,
                       "prompt_tokens": p.total, "sections": p.sections}
                      for p in self.prompts],
        }


def bench_of(spec: str, status: str, attempts: int,
             calls: Iterable[dict[str, Any]]) -> Bench:
    """The bench of a run from its model calls ({"role", "iteration", "purpose", "messages"},
    in order)."""
    bench = Bench(spec=spec, status=status, attempts=attempts)
    for call in calls:
        bench.prompts.append(Prompt(role=call["role"], attempt=int(call["iteration"] or 0),
                                    purpose=str(call.get("purpose") or ""),
                                    sections=sections_of(call["messages"])))
    return bench
