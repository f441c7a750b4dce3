"""Names in the plugin contract: a plugin's or command's name, and the Python package it gives.

The spec (autocoder/engine/spec.py) and plugin.toml (autocoder/plugins/manifest.py) follow the
same rule, so it is written here, below both.
"""

from __future__ import annotations

import keyword
import re

NAME_PATTERN = re.compile(r"(?=.*[A-Za-z0-9])[A-Za-z0-9_-]{1,64}")


def package_name(name: str) -> str:
    """The Python package for a plugin or command name: `weekly-scheduler` -> `weekly_scheduler`."""
    result = re.sub(r"[^a-z0-9]+", "_", (name or "").lower())
    if not result.isidentifier() or keyword.iskeyword(result):
        result = f"p_{result}"
    return result


def normalize_name(name: str) -> str:
    """PEP 503: lower case, every run of -, _ and . becomes one -."""
    return re.sub(r"[-_.]+", "-", name).lower()
