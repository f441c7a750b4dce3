"""The loop's door to the reference docs: the runtime's API entries (and the service's API
documentation a requester pasted) that a prompt's plan and failures call for.

Like lessons_port, a failure of the reference store never fails a run: the prompt goes without
reference docs and the error is logged. See docs/engine.md ("Reference docs").
"""

from __future__ import annotations

import logging

__all__ = ["retrieve"]

logger = logging.getLogger(__name__)


def retrieve(*, query: str, api_docs: str = "", k: int = 5) -> str:
    """The prompt block for `query`: the best `k` runtime entries, then the best `k` sections
    of `api_docs`; "" when nothing is loaded or retrieval fails."""
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
        return prompt_block(reference_for(query, limit=k, api_docs=api_docs))
    except Exception as exc:  # the store, the embedder or the database: never the run's end
        logger.warning("reference retrieval failed (%s: %s); continuing without reference docs",
                       type(exc).__name__, exc)
        return ""
