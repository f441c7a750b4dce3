"""The loop's door to the model: one call per role, its reply as text.

The runs app implements it (runs/llm_calls.py, RunLLM: the provider of each role, the record
of every call, the run's token counters); the loop depends on this protocol only.
"""

from __future__ import annotations

import hashlib
from typing import Protocol

from autocoder.llm.types import Message, ReplySchema

# Why a call is made, kept with its record (docs/engine.md, "The reply protocol for files"):
# the first ask, the continuation of a reply cut at its length limit, the same ask again with
# more room (a JSON reply, which cannot be continued), or again asking for a shorter reply.
FIRST, CONTINUE, LONGER, SHORTER = "", "continue", "longer", "shorter"
PURPOSES = (FIRST, CONTINUE, LONGER, SHORTER)


class ModelCalls(Protocol):
    """Calls the model for one step of a run; `tokens` is what this step spent so far."""

    @property
    def tokens(self) -> int: ...

    # How the last reply ended: "stop", "length" (the model stopped at its cap), "deadline".
    last_finish_reason: str

    def complete(self, role: str, messages: list[Message],
                 schema: ReplySchema | None = None, *, purpose: str = FIRST,
                 room: int = 1) -> str:
        """The reply's text; an LLMError when the call failed for good, an InstallationFault
        when the model cannot be reached or answers with an error of the installation's.
        With `schema`, the reply is held to it where the model's server allows (then it is
        JSON; engine/reply_formats.py reads both). `purpose` is kept with the call's record;
        `room` multiplies the role's reply cap (still fitted to the context window)."""
        ...

    def reply_cap(self, role: str, messages: list[Message], *, room: int = 1) -> int:
        """The cap, in tokens, a call of `role` with `messages` and `room` would have."""
        ...

    def prompt_chars(self, role: str) -> int | None:
        """The most characters `role`'s prompt may have for its reply to keep its room in the
        model's context window; None when the window is not known."""
        ...


def reply_hash(text: str) -> str:
    return hashlib.sha256(text.strip().encode()).hexdigest()[:16]
