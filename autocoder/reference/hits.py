"""What retrieval returns, and the names a text mentions (shared by the runtime's entries and
the pasted API documentation). See docs/engine.md ("Reference docs")."""

from __future__ import annotations

import re
from dataclasses import dataclass

# A mention of an entry's exact name (or alias) beats any similarity; a mention of its last
# part (`iter_rows`) counts less, as another library may have a method of that name.
EXACT_BONUS = 1.0
TAIL_BONUS = 0.35
MAX_TAIL_HITS = 4  # a last part matching more entries than this says nothing
# Priors, measured with the held-out questions: a library's front door (a class or function
# one dot deep, by its name or an alias: `yaml.safe_load`, `openpyxl.Workbook`) is what people
# mean more often than a parser's internals; a module or an entry without a docstring matches
# on its name alone and is worth less.
FRONT_DOOR_BONUS = 0.12
BARE_PENALTY = 0.04
PROMPT_DOC_CHARS = 300
MAX_NAMES = 40

_DOTTED = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+")
_IDENTIFIER = re.compile(r"\b[A-Za-z][A-Za-z0-9]*_[A-Za-z0-9_]+\b|\b[a-z]+[A-Z][A-Za-z0-9]+\b")


@dataclass(frozen=True)
class ReferenceHit:
    name: str
    kind: str
    signature: str
    doc: str
    library: str
    version: str
    score: float
    source: str = "runtime"  # or "api_docs": a section of the service's documentation

    def prompt_line(self) -> str:
        if self.source == "api_docs":
            return f"## {self.name} (the service's API documentation)\n{self.doc}"
        doc = self.doc if len(self.doc) <= PROMPT_DOC_CHARS else (
            self.doc[: PROMPT_DOC_CHARS - 3].rstrip() + "...")
        where = "Python" if self.library == "python" else self.library
        call = f"{self.name}{self.signature}" if self.kind != "property" else self.name
        return f"- `{call}` ({where} {self.version}, {self.kind})" + (f": {doc}" if doc else "")


def mentioned_names(text: str) -> tuple[list[str], list[str]]:
    """Dotted names, and last parts/identifiers that may be the end of an entry's name."""
    dotted = list(dict.fromkeys(_DOTTED.findall(text)))[:MAX_NAMES]
    tails = [d.rsplit(".", 1)[1] for d in dotted] + _IDENTIFIER.findall(text)
    tails = [t for t in dict.fromkeys(tails) if len(t) >= 4][:MAX_NAMES]
    return dotted, tails
