"""The loop's door to the reference docs: the runtime's API entries (and the service's API
documentation a requester pasted) that a prompt's plan and failures call for.

Like lessons_port, a failure of the reference store never fails a run: the prompt goes without
reference docs and the error is logged. See docs/engine.md ("Reference docs").
"""

from __future__ import annotations

import logging
from typing import Any

__all__ = ["MIN_RELEVANCE", "retrieve"]

logger = logging.getLogger(__name__)

# How close an entry must come to the plan and the failures to be offered (cosine similarity,
# plus the bonus of a name they mention). Measured (docs/engine.md, "Reference docs"): the
# entries that answer the held-out questions score 0.47-0.97, most above 0.55; the best
# entries for plans that need no API beyond the basics (a first-fit over days, a digest line,
# cents) score 0.43-0.53. Below it an entry is noise a model reads for nothing.
MIN_RELEVANCE = 0.55


def retrieve(*, query: str, api_docs: str = "", k: int = 5) -> str:
    """The prompt block for `query` (the plan and the failures at hand): the best `k` runtime
    entries that are relevant to it, then the best `k` sections of `api_docs`; "" when none is
    relevant, nothing is loaded or retrieval fails. Built-in names (`ValueError`, `sum`) are
    never offered: a model knows them."""
    if not query.strip():
        return ""
    # Imported here: the embedder loads a model, which prompts without reference should not pay.
    from autocoder.reference.background import ensure_loaded
    from autocoder.reference.loading import reference_loaded
    from autocoder.reference.retrieval import prompt_block, reference_for

    try:
        ensure_loaded()
        if not reference_loaded() and not api_docs.strip():
            return ""
        hits = reference_for(query, limit=k, api_docs=api_docs)
        return prompt_block([hit for hit in hits if relevant(hit)])
    except Exception as exc:  # the store, the embedder or the database: never the run's end
        logger.warning("reference retrieval failed (%s: %s); continuing without reference docs",
                       type(exc).__name__, exc)
        return ""


def relevant(hit: Any) -> bool:
    if hit.source == "api_docs":
        return True  # the service's own documentation, which the requester gave
    builtin = hit.library == "python" and "." not in hit.name
    return not builtin and hit.score >= MIN_RELEVANCE
