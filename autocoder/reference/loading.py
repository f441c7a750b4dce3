"""Loading the runtime's API reference (reference.json, written by the runtime's build) into
PostgreSQL with pgvector: once per library version and embedder, on first need or through
`manage.py reference_load`. See docs/engine.md ("Reference docs").

A load on first need runs in a background thread (autocoder/reference/background.py).
Embedding a few thousand entries takes minutes on a busy 2-core machine, so the vectors are
kept in a file beside reference.json (or under VAR_DIR when the runtime is read-only), named by
the file's digest and the embedder: a second load, in another database, only inserts rows.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from django.conf import settings
from django.db import transaction

from autocoder.lessons.embedder import EmbeddingStopped, bulk_embed_texts, embedder_identity
from autocoder.reference.models import ReferenceEntry, ReferenceSet
from autocoder.runtime import LIBRARIES, runtime_dir
from autocoder.runtime.build import REFERENCE_NAME

logger = logging.getLogger(__name__)

MAX_EMBED_CHARS = 300
INSERT_BATCH = 1000
_PURPOSES = {lib.distribution: lib.purpose.split(" (", 1)[0] for lib in LIBRARIES}


@dataclass
class LoadReport:
    loaded: list[str] = field(default_factory=list)  # "PyYAML 6.0.3", ...
    already: list[str] = field(default_factory=list)
    entries: int = 0
    embedded: int = 0  # entries embedded now (0 when the vectors came from the cache)
    seconds: float = 0.0


def reference_path() -> Path:
    return runtime_dir() / REFERENCE_NAME


def read_reference(path: Path | None = None) -> dict[str, Any]:
    return json.loads((path or reference_path()).read_bytes())


def embedding_text(entry: dict[str, Any]) -> str:
    """What is embedded for an entry: its name, the words of its last part ("get close
    matches"), the start of its docstring and, for a library, what the library is for ("read
    and write Excel spreadsheets"). Of the variants tried, the best on the held-out questions
    (docs/engine.md, "Reference docs")."""
    name = entry["name"]
    last = name.rsplit(".", 1)[-1].strip("_")
    words = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", last).replace("_", " ").lower()
    doc = entry.get("doc", "")[:MAX_EMBED_CHARS]
    text = f"{name} ({words}): {doc}" if doc else f"{name} ({words})"
    purpose = _PURPOSES.get(entry.get("library", ""), "")
    return f"{text} [{purpose}]" if purpose else text


class LoadStopped(Exception):
    """The load was asked to stop and did; nothing of it was kept (one transaction)."""


def load_reference(*, path: Path | None = None, force: bool = False,
                   libraries: set[str] | None = None,
                   should_stop: Callable[[], bool] | None = None) -> LoadReport:
    """Load what is not loaded yet for the current embedder; `libraries` limits it to those
    (distribution names, "python" for the standard library). `should_stop` is asked between
    slices of the work (autocoder/reference/background.py); LoadStopped when it says yes."""
    started = time.monotonic()
    path = path or reference_path()
    data = read_reference(path)
    identity = embedder_identity()
    groups: dict[tuple[str, str], list[int]] = defaultdict(list)
    entries = data["entries"]
    for i, entry in enumerate(entries):
        if libraries is None or entry["library"] in libraries:
            groups[(entry["library"], entry["version"])].append(i)
    present = set(ReferenceSet.objects.filter(embedded_with=identity)
                  .values_list("library", "version"))
    report = LoadReport()
    wanted = {key: rows for key, rows in groups.items() if force or key not in present}
    report.already = sorted(f"{lib} {ver}" for lib, ver in groups if (lib, ver) not in wanted)
    if not wanted:
        report.seconds = time.monotonic() - started
        return report
    indices = sorted(i for rows in wanted.values() for i in rows)
    try:
        vectors, report.embedded = _vectors(path, entries, indices, identity,
                                            whole=len(indices) == len(entries),
                                            should_stop=should_stop)
    except EmbeddingStopped as stopped:
        raise LoadStopped(str(stopped)) from None
    row_of = {index: row for row, index in enumerate(indices)}
    with transaction.atomic():
        # One version of a library at a time: the runtime holds one.
        ReferenceSet.objects.filter(library__in={lib for lib, _ in wanted},
                                    embedded_with=identity).delete()
        for (lib, version), rows in sorted(wanted.items()):
            reference_set = ReferenceSet.objects.create(library=lib, version=version,
                                                        embedded_with=identity, entries=len(rows))
            for start in range(0, len(rows), INSERT_BATCH):
                if should_stop is not None and should_stop():
                    raise LoadStopped(f"stopped while storing {lib}")  # rolls back
                ReferenceEntry.objects.bulk_create(
                    [_entry(reference_set, entries[i], vectors[row_of[i]])
                     for i in rows[start:start + INSERT_BATCH]])
            report.loaded.append(f"{lib} {version}")
            report.entries += len(rows)
    report.seconds = time.monotonic() - started
    return report


def _entry(reference_set: ReferenceSet, entry: dict[str, Any], vector: np.ndarray
           ) -> ReferenceEntry:
    return ReferenceEntry(reference_set=reference_set, name=entry["name"][:300],
                          aliases=[a[:300] for a in entry.get("aliases", [])],
                          kind=entry["kind"], signature=entry.get("signature", ""),
                          doc=entry.get("doc", ""), library=entry["library"],
                          version=entry["version"], embedding=vector)


def _vectors(path: Path, entries: list[dict[str, Any]], indices: list[int], identity: str,
             *, whole: bool, should_stop: Callable[[], bool] | None = None
             ) -> tuple[np.ndarray, int]:
    """Vectors for entries[indices], from the cache when it holds them."""
    texts = [embedding_text(entry) for entry in entries]
    cache = _cache_file(path, texts, identity)
    if cache.exists():
        try:
            cached = np.load(cache)
            if cached.shape[0] == len(entries):
                return cached[indices], 0
        except (OSError, ValueError):
            logger.warning("ignoring an unreadable reference vector cache at %s", cache)
    wanted = [texts[i] for i in (indices if not whole else range(len(entries)))]
    # Shortest first: a batch is padded to its longest text, so like lengths embed fastest.
    order = sorted(range(len(wanted)), key=lambda k: len(wanted[k]))
    embedded = bulk_embed_texts([wanted[k] for k in order], should_stop=should_stop)
    vectors = np.empty_like(embedded)
    vectors[order] = embedded
    if whole:
        _save(cache, vectors)
    return vectors, len(wanted)


def _cache_file(path: Path, texts: list[str], identity: str) -> Path:
    """Named by what was embedded and by which model, so a new extraction with the same
    entries keeps its vectors and any change in them makes new ones."""
    digest = hashlib.sha256("\n".join([identity, *texts]).encode()).hexdigest()[:20]
    name = f"reference-vectors-{digest}.npy"
    if os.access(path.parent, os.W_OK):
        return path.parent / name
    return Path(settings.VAR_DIR) / "reference" / name


def _save(cache: Path, vectors: np.ndarray) -> None:
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        for old in cache.parent.glob("reference-vectors-*.npy"):
            old.unlink(missing_ok=True)
        partial = cache.with_name(f"{cache.stem}.{os.getpid()}.part.npy")
        np.save(partial, vectors)
        partial.replace(cache)
    except OSError:
        logger.warning("could not keep the reference vectors at %s", cache)


def reference_loaded() -> bool:
    """Whether any reference entry is there for the current embedder (a cheap look)."""
    return ReferenceSet.objects.filter(embedded_with=embedder_identity()).exists()
