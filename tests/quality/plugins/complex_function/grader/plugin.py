"""Grades scores."""

from __future__ import annotations

from typing import Any


class Plugin:
    """Grades scores."""

    def on_command(self, name: str, payload: dict[str, Any]) -> dict[str, Any]:
        handlers = {"grade": self.grade}
        handler = handlers.get(name)
        if handler is None:
            raise ValueError(f"unknown command: {name!r}")
        return handler(payload)

    def grade(self, payload: dict[str, Any]) -> dict[str, Any]:
        return {"grade": letter(payload["score"])}


def letter(score: float) -> str:
    if score >= 97:
        result = "A+"
    elif score >= 93:
        result = "A"
    elif score >= 90:
        result = "A-"
    elif score >= 87:
        result = "B+"
    elif score >= 83:
        result = "B"
    elif score >= 80:
        result = "B-"
    elif score >= 77:
        result = "C+"
    elif score >= 73:
        result = "C"
    elif score >= 70:
        result = "C-"
    elif score >= 60:
        result = "D"
    else:
        result = "F"
    if len(result) == 2 and result[1] == "+" and score >= 99:
        result = result[0] + "++"
    return result.rstrip("+-") if score < 0 else result
