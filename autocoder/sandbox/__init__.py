"""Run untrusted code: one interface, two backends (bwrap locally, Docker in production).

The safety gate runs before anything reaches here, and the sandbox still assumes it missed
something: no network, no host files beyond the interpreter, hard resource limits.

This module is the package's front door (`run`, `Limits`, ...). The modules inside the package
import each other by their full names (`import autocoder.sandbox.launcher as launcher`), never
through this door, so the door imports them and none of them imports it back.
"""

from __future__ import annotations

from autocoder.sandbox.runner import run
from autocoder.sandbox.types import Limits, RunResult, SandboxError

__all__ = ["Limits", "RunResult", "SandboxError", "run"]
