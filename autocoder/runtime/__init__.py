"""The plugin runtime: an interpreter environment of its own that plugin code runs in.

Generated and uploaded plugins (their tests, "Try it") never run on the portal's
interpreter: the sandbox runs them on this environment's Python, which holds the standard
library, pytest and the short, pinned list of LIBRARIES below (plus the quality pipeline's
checking TOOLS, which plugins may not import), and none of the portal's own packages (Django,
psycopg, torch, the LLM SDKs). `make run`, `make test`, the Dockerfile and
the sandbox image all build it from requirements.txt beside this file. The model is told
exactly these libraries, and the safety gate refuses imports of anything else.
See docs/plugins.md ("What a plugin can use") and docs/sandbox.md ("The plugin runtime").
"""

from __future__ import annotations

import hashlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path

REQUIREMENTS = Path(__file__).with_name("requirements.txt")
STAMP_NAME = "autocoder-runtime.json"
_REPO_ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Library:
    """A library plugins may import: its distribution, pinned version and import names."""

    distribution: str
    version: str
    modules: tuple[str, ...]
    purpose: str


LIBRARIES: tuple[Library, ...] = (
    Library("openpyxl", "3.1.5", ("openpyxl",),
            "read and write Excel spreadsheets (.xlsx)"),
    Library("python-dateutil", "4.0.0", ("dateutil",),
            "parse dates written in many ways, add months, recurrence rules"),
    Library("tzdata", "2026.6", ("tzdata",),
            "the time zone database behind zoneinfo (use zoneinfo.ZoneInfo)"),
    Library("PyYAML", "6.0.3", ("yaml",), "read and write YAML (use yaml.safe_load)"),
    Library("tomli-w", "1.2.0", ("tomli_w",), "write TOML (tomllib reads it)"),
    Library("Jinja2", "3.1.6", ("jinja2",),
            "fill in text templates (letters, reports; render them with "
            "jinja2.sandbox.SandboxedEnvironment)"),
)
# Importable by a plugin's tests only.
TEST_LIBRARIES: tuple[Library, ...] = (
    Library("pytest", "9.2.0", ("pytest", "_pytest"), "the tests"),
    # Property-based tests: any strategy may use them; stress asks for them (strategies.py).
    Library("hypothesis", "6.170.17", ("hypothesis",), "property-based tests"),
)


# Checking tools the quality pipeline runs on a plugin (docs/engine.md, "The quality pipeline").
# They are in the runtime but are not libraries: neither plugin code nor its tests may import them.
TOOLS: tuple[Library, ...] = (
    Library("ruff", "0.17.6", ("ruff",), "lint, import order and format"),
    Library("mypy", "2.4.1", ("mypy",), "type checking of the plugin package"),
    Library("coverage", "7.17.5", ("coverage",), "line and branch coverage of the tests"),
)


def plugin_modules() -> frozenset[str]:
    """Top-level import names plugin code may use besides the standard library."""
    return frozenset(name for lib in LIBRARIES for name in lib.modules)


def test_modules() -> frozenset[str]:
    """Import names a plugin's tests may use: the plugin's own, pytest and hypothesis."""
    return plugin_modules() | {name for lib in TEST_LIBRARIES for name in lib.modules}


def library_for_module(module: str) -> Library | None:
    top = module.split(".", 1)[0]
    return next((lib for lib in LIBRARIES if top in lib.modules), None)


def runtime_dir() -> Path:
    """Where the runtime lives: PLUGIN_RUNTIME_DIR, else .plugin-runtime in the checkout."""
    configured = os.environ.get("PLUGIN_RUNTIME_DIR", "")
    try:
        from django.conf import settings

        if settings.configured:
            configured = getattr(settings, "PLUGIN_RUNTIME_DIR", "") or configured
    except ImportError:  # used by the build script before Django is installed
        pass
    return Path(configured).expanduser() if configured else _REPO_ROOT / ".plugin-runtime"


def runtime_python(directory: Path | None = None) -> Path:
    return (directory or runtime_dir()) / "bin" / "python3"


def requirements_digest() -> str:
    """What the runtime was built from: the lock's content and this Python's version."""
    content = REQUIREMENTS.read_bytes() + f"\n{sys.version_info[:3]}".encode()
    return hashlib.sha256(content).hexdigest()


def runtime_problem(directory: Path | None = None) -> str | None:
    """Why the runtime at `directory` cannot be used as built (a cheap look, no sandbox run)."""
    import json

    directory = directory or runtime_dir()
    if not runtime_python(directory).exists():
        return f"it is not built (no interpreter at {runtime_python(directory)})"
    try:
        stamp = json.loads((directory / STAMP_NAME).read_text())
    except (OSError, ValueError):
        return f"its build did not finish ({directory / STAMP_NAME} is missing)"
    if stamp.get("digest") != requirements_digest():
        return "it is out of date (autocoder/runtime/requirements.txt changed since it was built)"
    return None


BUILD_FIX = ("run `make run` again, or `python -m autocoder.runtime.build` "
             "(see docs/sandbox.md, 'The plugin runtime')")
