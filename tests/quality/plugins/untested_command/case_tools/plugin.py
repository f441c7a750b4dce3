"""Changes the case of text."""

from __future__ import annotations

from typing import Any


class Plugin:
    """Changes the case of text."""

    def on_command(self, name: str, payload: dict[str, Any]) -> dict[str, Any]:
        handlers = {"shout": self.shout, "whisper": self.whisper}
        handler = handlers.get(name)
        if handler is None:
            raise ValueError(f"unknown command: {name!r}")
        return handler(payload)

    def shout(self, payload: dict[str, Any]) -> dict[str, Any]:
        return {"text": payload["text"].upper()}

    def whisper(self, payload: dict[str, Any]) -> dict[str, Any]:
        text = payload["text"]
        return {"text": text.lower()}
