"""Adds numbers."""

from __future__ import annotations

from typing import Any


class Plugin:
    """Adds numbers."""

    def on_command(self, name: str, payload: dict[str, Any]) -> dict[str, Any]:
        handlers = {"add": self.add}
        handler = handlers.get(name)
        if handler is None:
            raise ValueError(f"unknown command: {name!r}")
        return handler(payload)

    def add(self, payload: dict[str, Any]) -> dict[str, Any]:
        return {"sum": payload["a"] - payload["b"]}
