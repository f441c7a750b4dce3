"""Counts words."""

from __future__ import annotations

from typing import Any


class Plugin:
    """Counts words."""

    def on_command(self, name: str, payload: dict[str, Any]) -> dict[str, Any]:
        handlers = {"count-words": self.count_words, "top-word": self.top_word}
        handler = handlers.get(name)
        if handler is None:
            raise ValueError(f"unknown command: {name!r}")
        return handler(payload)

    def count_words(self, payload: dict[str, Any]) -> dict[str, Any]:
        return {"words": len(payload["text"].split())}

    def top_word(self, payload: dict[str, Any]) -> dict[str, Any]:
        counts: dict[str, int] = {}
        for word in payload["text"].split():
            counts[word] = counts.get(word, 0) + 1
        if not counts:
            return {"word": "", "count": 0}
        word = max(counts, key=lambda w: (counts[w], w))
        return {"word": word, "count": counts[word]}
