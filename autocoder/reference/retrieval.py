"""Retrieval of reference entries for a prompt: exact names first, then meaning.

A name the text mentions (`openpyxl.load_workbook`, `ws.iter_rows`, `safe_load`) is what the
model is about to call, so a hit on it counts strongly; the rest is cosine similarity between
chunks of the text and the entries. API documentation a requester pasted (`spec.api_docs`) is
ranked the same way in memory (autocoder/reference/api_docs.py). See docs/engine.md
("Reference docs").
"""

from __future__ import annotations

import re

import numpy as np
from django.db.models import Q
from pgvector.django import CosineDistance

from autocoder.lessons.embedder import embed_texts, embedder_identity
from autocoder.reference.api_docs import api_docs_hits
from autocoder.reference.hits import (
    BARE_PENALTY,
    EXACT_BONUS,
    FRONT_DOOR_BONUS,
    MAX_TAIL_HITS,
    TAIL_BONUS,
    ReferenceHit,
    mentioned_names,
)
from autocoder.reference.models import ReferenceEntry

__all__ = ["ReferenceHit", "prompt_block", "reference_for"]

MAX_CHUNKS = 6
CHUNK_CHARS = 400
CANDIDATES_PER_CHUNK = 60


def chunks(text: str) -> list[str]:
    """The text in pieces the embedder reads whole, the first MAX_CHUNKS of them."""
    pieces: list[str] = []
    current = ""
    for block in re.split(r"\n\s*\n|\n(?=[-*#] )", text.strip()):
        block = " ".join(block.split())
        if not block:
            continue
        if current and len(current) + len(block) + 1 > CHUNK_CHARS:
            pieces.append(current)
            current = ""
        current = f"{current} {block}".strip()
        while len(current) > CHUNK_CHARS:
            pieces.append(current[:CHUNK_CHARS])
            current = current[CHUNK_CHARS:]
        if len(pieces) >= MAX_CHUNKS:
            break
    if current and len(pieces) < MAX_CHUNKS:
        pieces.append(current)
    return pieces[:MAX_CHUNKS]


def reference_for(text: str, *, limit: int = 5, api_docs: str = "") -> list[ReferenceHit]:
    """The runtime's entries that best answer `text` (a plan, failing tests, a question), and
    when `api_docs` is given, as many of its sections after them."""
    text = (text or "").strip()
    if not text:
        return []
    pieces = chunks(text)
    vectors = embed_texts(pieces)
    hits = _runtime_hits(text, vectors, limit)
    if api_docs.strip():
        hits += api_docs_hits(api_docs, text, vectors, limit=limit)
    return hits


def _runtime_hits(text: str, vectors: np.ndarray, limit: int) -> list[ReferenceHit]:
    identity = embedder_identity()
    entries = ReferenceEntry.objects.filter(reference_set__embedded_with=identity)
    scores: dict[int, float] = {}
    found: dict[int, ReferenceEntry] = {}
    for vector in vectors:
        nearest = (entries.annotate(distance=CosineDistance("embedding", vector.tolist()))
                   .order_by("distance")[:CANDIDATES_PER_CHUNK])
        for near in nearest:
            similarity = 1.0 - float(near.distance)
            if similarity > scores.get(near.pk, -1.0):
                scores[near.pk] = similarity
                found[near.pk] = near
    dotted, tails = mentioned_names(text)
    bonus: dict[int, float] = {}
    if dotted:
        for entry in entries.filter(Q(name__in=dotted) | Q(aliases__overlap=dotted)):
            found[entry.pk] = entry
            bonus[entry.pk] = EXACT_BONUS
    for tail in tails:
        matches = list(entries.filter(Q(name__endswith=f".{tail}") | Q(name=tail))
                       .order_by("name")[:MAX_TAIL_HITS + 1])
        if len(matches) > MAX_TAIL_HITS:
            continue
        for entry in matches:
            found[entry.pk] = entry
            bonus[entry.pk] = max(bonus.get(entry.pk, 0.0), TAIL_BONUS)
    if not found:
        return []
    for pk, entry in found.items():
        if pk not in scores:  # named, not among the nearest: its similarity still orders it
            scores[pk] = float(np.max(vectors @ np.asarray(entry.embedding, dtype=np.float32)))
    for pk, entry in found.items():
        bonus[pk] = bonus.get(pk, 0.0) + prior(entry)
    ranked = sorted(found, key=lambda pk: (-(scores[pk] + bonus[pk]), found[pk].name))
    return [_hit(found[pk], scores[pk] + bonus[pk]) for pk in ranked[:limit]]


def prior(entry: ReferenceEntry) -> float:
    if entry.kind == "module" or not entry.doc:
        return -BARE_PENALTY
    if entry.kind in ("class", "function") and min(
            name.count(".") for name in [entry.name, *entry.aliases]) <= 1:
        return FRONT_DOOR_BONUS
    return 0.0


def _hit(entry: ReferenceEntry, score: float) -> ReferenceHit:
    return ReferenceHit(name=entry.name, kind=entry.kind, signature=entry.signature,
                        doc=entry.doc, library=entry.library, version=entry.version,
                        score=round(score, 4))


def prompt_block(hits: list[ReferenceHit]) -> str:
    """The hits as the prompt shows them, best first (so trimming cuts the weakest)."""
    return "\n".join(hit.prompt_line() for hit in hits)
