"""Greets people."""

from __future__ import annotations

from typing import Any


class Plugin:
    """Greets people."""

    def on_command(self, name: str, payload: dict[str, Any]) -> dict[str, Any]:
        handlers = {"greet": self.greet}
        handler = handlers.get(name)
        if handler is None:
            raise ValueError(f"unknown command: {name!r}")
        return handler(payload)

    def greet(self, payload: dict[str, Any]) -> dict[str, Any]:
        return {"greeting": f"Hello, {payload['name']}!"}
