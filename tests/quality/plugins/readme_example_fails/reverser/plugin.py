"""Reverses text."""

from __future__ import annotations

from typing import Any


class Plugin:
    """Reverses text."""

    def on_command(self, name: str, payload: dict[str, Any]) -> dict[str, Any]:
        handlers = {"reverse": self.reverse}
        handler = handlers.get(name)
        if handler is None:
            raise ValueError(f"unknown command: {name!r}")
        return handler(payload)

    def reverse(self, payload: dict[str, Any]) -> dict[str, Any]:
        return {"text": payload["text"][::-1]}
