"""Describes numbers."""

from __future__ import annotations

from typing import Any


class Plugin:
    """Describes numbers."""

    def on_command(self, name: str, payload: dict[str, Any]) -> dict[str, Any]:
        handlers = {"describe": self.describe}
        handler = handlers.get(name)
        if handler is None:
            raise ValueError(f"unknown command: {name!r}")
        return handler(payload)

    def describe(self, payload: dict[str, Any]) -> dict[str, Any]:
        numbers = payload["numbers"]
        style = payload.get("style", "short")
        if style == "short":
            return {"text": f"{len(numbers)} numbers"}
        total = sum(numbers)
        mean = total / len(numbers) if numbers else 0.0
        low = min(numbers) if numbers else 0
        high = max(numbers) if numbers else 0
        spread = high - low
        words = [f"{len(numbers)} numbers", f"total {total}", f"mean {mean:.2f}"]
        words.append(f"from {low} to {high}")
        if spread > 100:
            words.append("widely spread")
        elif spread > 10:
            words.append("somewhat spread")
        else:
            words.append("close together")
        if style == "long":
            words.append("sorted: " + ", ".join(str(n) for n in sorted(numbers)))
        return {"text": "; ".join(words)}
