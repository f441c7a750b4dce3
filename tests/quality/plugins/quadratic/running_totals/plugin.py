"""Running totals."""

from __future__ import annotations

from typing import Any


class Plugin:
    """Running totals."""

    def on_command(self, name: str, payload: dict[str, Any]) -> dict[str, Any]:
        handlers = {"running-totals": self.running_totals}
        handler = handlers.get(name)
        if handler is None:
            raise ValueError(f"unknown command: {name!r}")
        return handler(payload)

    def running_totals(self, payload: dict[str, Any]) -> dict[str, Any]:
        numbers = payload["numbers"]
        totals = []
        for i in range(len(numbers)):
            total = 0
            for j in range(i + 1):
                total += numbers[j]
            totals.append(total)
        return {"totals": totals}
