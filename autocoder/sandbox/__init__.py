"""Run untrusted code: one interface, two backends (bwrap locally, Docker in production).

The safety gate runs before anything reaches here, and the sandbox still assumes it missed
something: no network, no host files beyond the interpreter, hard resource limits.
"""

from __future__ import annotations

from autocoder.sandbox.runner import run
from autocoder.sandbox.types import Limits, RunResult, SandboxError

__all__ = ["Limits", "RunResult", "SandboxError", "run"]
