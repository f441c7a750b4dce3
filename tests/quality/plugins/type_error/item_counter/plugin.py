"""Counts items."""

from __future__ import annotations

from typing import Any


class Plugin:
    """Counts items."""

    def on_command(self, name: str, payload: dict[str, Any]) -> dict[str, Any]:
        handlers = {"count-items": self.count_items}
        handler = handlers.get(name)
        if handler is None:
            raise ValueError(f"unknown command: {name!r}")
        return handler(payload)

    def count_items(self, payload: dict[str, Any]) -> dict[str, Any]:
        return {"count": size(payload["items"])}


def size(items: list[str]) -> str:
    return len(items)
