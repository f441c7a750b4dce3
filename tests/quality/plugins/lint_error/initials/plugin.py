# ruff: noqa  (the defects are on purpose: the quality pipeline must name them)
"""Initials of a name."""

from __future__ import annotations

import os
from typing import Any


class Plugin:
    """Initials of a name."""

    def on_command(self, name: str, payload: dict[str, Any]) -> dict[str, Any]:
        handlers = {"initials": self.initials}
        handler = handlers.get(name)
        if handler is None:
            raise ValueError(f"unknown command: {name!r}")
        return handler(payload)

    def initials(self, payload: dict[str, Any]) -> dict[str, Any]:
        name = payload.get("name")
        if name == None:
            name = ""
        return {"initials": "".join(part[0].upper() for part in name.split())}
