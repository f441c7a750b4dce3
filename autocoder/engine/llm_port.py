"""The loop's door to the model: one call per role, its reply as text.

The runs app implements it (runs/llm_calls.py, RunLLM: the provider of each role, the record
of every call, the run's token counters); the loop depends on this protocol only.
"""

from __future__ import annotations

import hashlib
from typing import Protocol

from autocoder.llm.types import Message, ReplySchema


class ModelCalls(Protocol):
    """Calls the model for one step of a run; `tokens` is what this step spent so far."""

    @property
    def tokens(self) -> int: ...

    # How the last reply ended: "stop", "length" (the model stopped at its cap), "deadline".
    last_finish_reason: str

    def complete(self, role: str, messages: list[Message],
                 schema: ReplySchema | None = None) -> str:
        """The reply's text; an LLMError when the call failed for good, an InstallationFault
        when the model cannot be reached or answers with an error of the installation's.
        With `schema`, the reply is held to it where the model's server allows (then it is
        JSON; engine/reply_formats.py reads both)."""
        ...


def reply_hash(text: str) -> str:
    return hashlib.sha256(text.strip().encode()).hexdigest()[:16]
