"""Scripted provider: replays recorded replies per role (docs/llm.md, "The scripted provider").

The test double of the engine and the engine of recorded demos. A script maps a role to its
replies in order; each call for a role takes the next reply, after the last the last repeats,
and a role the script does not mention replies with an empty string.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Mapping
from pathlib import Path

from autocoder.llm.base import BaseProvider, Reply, TextCallback, estimate_tokens, prompt_text
from autocoder.llm.types import (
    CAPPED,
    FINISHED,
    ROLES,
    LLMConfigError,
    Message,
    ProviderConfig,
    ReplyFormat,
)

SCRIPTED_MODEL = "script"


def validate_script(script: object, *, source: str = "script") -> dict[str, list[str]]:
    """A clean copy of `script`, or LLMConfigError naming what is wrong and where."""
    if not isinstance(script, Mapping):
        raise LLMConfigError(f"{source}: expected a JSON object mapping role -> list of replies")
    clean: dict[str, list[str]] = {}
    for role, replies in script.items():
        if role not in ROLES:
            raise LLMConfigError(
                f"{source}: unknown role {role!r}; roles are {', '.join(ROLES)}")
        if not isinstance(replies, list) or not all(isinstance(r, str) for r in replies):
            raise LLMConfigError(f"{source}: replies for {role!r} must be a list of strings")
        clean[role] = list(replies)
    return clean


class ScriptedProvider(BaseProvider):
    """Replays a script; one instance keeps its per-role position for a whole run.

    Token usage is an estimate (whitespace-separated words of prompt and reply) so budgets and
    cost accounting behave in tests as they would with a real model.
    """

    name = "scripted"

    def __init__(self, script: Mapping[str, list[str]], *, source: str = "script") -> None:
        super().__init__(ProviderConfig(provider="scripted", model=SCRIPTED_MODEL, max_retries=0))
        self.script = validate_script(script, source=source)
        self._position: dict[str, int] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_file(cls, path: Path | str) -> ScriptedProvider:
        path = Path(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise LLMConfigError(f"script file not found: {path}") from None
        except (OSError, UnicodeDecodeError) as error:
            raise LLMConfigError(f"cannot read script file {path}: {error}") from None
        except json.JSONDecodeError as error:
            raise LLMConfigError(f"script file {path} is not valid JSON: {error}") from None
        return cls(data, source=str(path))

    def position(self) -> dict[str, int]:
        """How many replies each role has taken; feed it to `restore` in another process."""
        with self._lock:
            return dict(self._position)

    def restore(self, position: Mapping[str, int]) -> None:
        clean: dict[str, int] = {}
        for role, taken in position.items():
            if role not in ROLES:
                raise LLMConfigError(f"script position: unknown role {role!r}")
            if isinstance(taken, bool) or not isinstance(taken, int) or taken < 0:
                raise LLMConfigError(f"script position for {role!r} must be an int >= 0")
            clean[role] = taken
        with self._lock:
            self._position = clean

    def next_reply(self, role: str) -> str:
        with self._lock:
            replies = self.script.get(role) or []
            taken = self._position.get(role, 0)
            self._position[role] = taken + 1
        if not replies:
            return ""
        return replies[min(taken, len(replies) - 1)]

    def _attempt(self, messages: list[Message], *, role: str, max_tokens: int | None,
                 temperature: float | None, timeout_s: float,
                 on_text: TextCallback | None, deadline: float | None = None,
                 reply_format: ReplyFormat | None = None) -> Reply:
        text, finish = _capped(self.next_reply(role), max_tokens)
        if on_text is not None:
            on_text(text)
        return Reply(text=text, prompt_tokens=estimate_tokens(prompt_text(messages)),
                     completion_tokens=estimate_tokens(text), model=SCRIPTED_MODEL,
                     finish_reason=finish)


def _capped(text: str, max_tokens: int | None) -> tuple[str, str]:
    """A reply longer than the cap stops at it, as a model's does (its tokens counted as
    `estimate_tokens` counts them: words), with finish_reason "length"."""
    if not max_tokens or estimate_tokens(text) <= max_tokens:
        return text, FINISHED
    words = re.finditer(r"\S+", text)
    end = [match.end() for _, match in zip(range(max_tokens), words, strict=False)][-1]
    return text[:end], CAPPED
