"""A service's API documentation, pasted by the requester (`spec.api_docs`), ranked in memory.

It is split into sections (at markdown headings, else at blank lines, merged up to
SECTION_CHARS), embedded once per text and process (a small cache), and ranked for a prompt
like the runtime's entries: a section that mentions a name or path the text mentions (an
endpoint such as `/v1/invoices`, a field such as `customer_id`) counts strongly, the rest is
cosine similarity. A few dozen sections embed in well under a second, so nothing is stored in
the database. See docs/engine.md ("Reference docs").
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from autocoder.lessons.embedder import embed_texts
from autocoder.reference.hits import EXACT_BONUS, ReferenceHit, mentioned_names

SECTION_CHARS = 1200
MAX_SECTIONS = 200
PROMPT_SECTION_CHARS = 900
_CACHE_SIZE = 16
_PATH = re.compile(r"/[A-Za-z0-9_{}:.-]+(?:/[A-Za-z0-9_{}:.-]+)+|/[A-Za-z0-9_-]{3,}")
_HEADING = re.compile(r"^(#{1,6} .+|[^\n]+\n[=-]{3,})$", re.M)


@dataclass(frozen=True)
class Section:
    title: str
    text: str


def split_sections(text: str) -> list[Section]:
    """Sections at markdown headings; without headings, paragraphs merged to SECTION_CHARS."""
    text = text.replace("\r\n", "\n").strip()
    if not text:
        return []
    starts = [m.start() for m in _HEADING.finditer(text)]
    if starts:
        bounds = ([0] if starts[0] > 0 else []) + starts + [len(text)]
        raw = [text[a:b].strip() for a, b in zip(bounds, bounds[1:], strict=False)]
    else:
        raw = []
        current = ""
        for paragraph in re.split(r"\n\s*\n", text):
            if current and len(current) + len(paragraph) > SECTION_CHARS:
                raw.append(current)
                current = ""
            current = f"{current}\n\n{paragraph}".strip()
        raw.append(current)
    sections = []
    for body in raw:
        if not body:
            continue
        first = body.split("\n", 1)[0].lstrip("#").strip()
        for start in range(0, len(body), SECTION_CHARS):
            part = body[start:start + SECTION_CHARS]
            title = first if start == 0 else f"{first} (continued)"
            sections.append(Section(title=title[:120], text=part))
    return sections[:MAX_SECTIONS]


_cache: OrderedDict[str, tuple[list[Section], np.ndarray]] = OrderedDict()
_lock = threading.Lock()


def _indexed(api_docs: str) -> tuple[list[Section], np.ndarray]:
    key = hashlib.sha256(api_docs.encode()).hexdigest()
    with _lock:
        if key in _cache:
            _cache.move_to_end(key)
            return _cache[key]
    sections = split_sections(api_docs)
    vectors = embed_texts([s.text for s in sections])
    with _lock:
        _cache[key] = (sections, vectors)
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return sections, vectors


def api_docs_hits(api_docs: str, text: str, query_vectors: np.ndarray, *, limit: int = 5
                  ) -> list[ReferenceHit]:
    sections, vectors = _indexed(api_docs)
    if not sections:
        return []
    similarity = (vectors @ query_vectors.T).max(axis=1)
    dotted, tails = mentioned_names(text)
    terms = {t for t in [*dotted, *tails, *_PATH.findall(text)] if len(t) >= 4}
    scores = []
    for i, section in enumerate(sections):
        named = any(term in section.text for term in terms)
        scores.append(float(similarity[i]) + (EXACT_BONUS if named else 0.0))
    order = sorted(range(len(sections)), key=lambda i: -scores[i])[:limit]
    return [ReferenceHit(name=sections[i].title, kind="section", signature="",
                         doc=sections[i].text[:PROMPT_SECTION_CHARS], library="api_docs",
                         version="", score=round(scores[i], 4), source="api_docs")
            for i in order]
