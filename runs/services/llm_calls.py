"""Model calls made outside a run (the interview's analyst, a change request's follow-up):
they cost tokens too, so they are stored like a run's, without the run."""

from __future__ import annotations

from collections.abc import Sequence

from autocoder.llm.types import CallRecord, Message
from runs.models import LLMCall


def llm_calls_record_unattached(messages: Sequence[Message], records: Sequence[CallRecord], *,
                                reply: str, error: str) -> None:
    """One LLMCall per attempt in `records`, each with the conversation and the reply."""
    stored = [{"role": m.role, "content": m.content} for m in messages]
    for record in records:
        LLMCall.objects.create(
            role=record.role, provider=record.provider, model=record.model,
            prompt_tokens=record.prompt_tokens, completion_tokens=record.completion_tokens,
            latency_ms=record.latency_ms, attempts=record.attempts,
            error=record.error or error, messages=stored, reply=reply)
