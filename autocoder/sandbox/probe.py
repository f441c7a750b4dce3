"""The real-path check of the plugin runtime: a tiny known-good plugin's tests, run in the
sandbox exactly as a generation run runs them. `doctor`, `/healthz`, held runs and the loop
(when a test run produced no result at all) ask it: if this plugin cannot be tested either,
the fault is the installation's, never the model's or the requester's.
"""

from __future__ import annotations

import threading
import time

from autocoder.installation import InstallationFault
from autocoder.runtime import BUILD_FIX, LIBRARIES, runtime_problem

CACHE_S = 60.0
_PORTAL_PACKAGES = ("django", "psycopg", "torch", "openai", "anthropic", "autocoder")
_lock = threading.Lock()
_cached: tuple[float, InstallationFault | None] | None = None


def probe_files() -> dict[str, str | bytes]:
    """A plugin whose one test passes only in a working runtime (libraries present, the
    portal's packages absent)."""
    imports = "\n".join(f"import {lib.modules[0]}  # noqa: F401" for lib in LIBRARIES)
    test = (
        "import importlib.util\n\n"
        f"{imports}\n\n\n"
        "def test_the_runtime_holds_its_libraries_and_nothing_of_the_portal():\n"
        f"    leaked = [name for name in {_PORTAL_PACKAGES!r}\n"
        "              if importlib.util.find_spec(name) is not None]\n"
        "    assert not leaked, f'portal packages importable: {leaked}'\n"
    )
    return {"tests/__init__.py": "", "tests/test_runtime.py": test}


def runtime_fault(*, fresh: bool = False) -> InstallationFault | None:
    """The runtime's (or the sandbox's) fault, or None when a plugin's tests can run.
    A result is reused for CACHE_S unless `fresh`."""
    global _cached
    with _lock:
        if not fresh and _cached is not None and time.monotonic() - _cached[0] < CACHE_S:
            return _cached[1]
        fault = _check()
        _cached = (time.monotonic(), fault)
        return fault


def _check() -> InstallationFault | None:
    from autocoder.sandbox import Limits, SandboxError
    from autocoder.sandbox.pytest_runner import run_pytest
    from autocoder.sandbox.runner import default_backend
    from autocoder.sandbox.types import PluginRuntimeError

    if default_backend() == "docker":  # the image holds the runtime, not this machine
        from django.conf import settings

        from autocoder.sandbox.image import docker_problem

        found = docker_problem(settings.SANDBOX_DOCKER_IMAGE, settings.SANDBOX_DOCKER_RUNTIME)
        if found:
            return InstallationFault("sandbox", *found)
    elif problem := runtime_problem():
        return InstallationFault("runtime", problem, BUILD_FIX)
    try:
        report = run_pytest(probe_files(), limits=Limits(timeout_s=60, memory_mb=512))
    except PluginRuntimeError as error:
        return InstallationFault("runtime", error.problem, BUILD_FIX)
    except SandboxError as error:
        return InstallationFault("sandbox", str(error), SANDBOX_FIX)
    if report.passed == 1 and not report.failed and not report.errors:
        return None
    detail = "\n".join(o.message for o in report.outcomes if o.outcome != "passed")
    tail = (report.run.stderr or report.run.stdout or "").strip()[-600:]
    return InstallationFault(
        "runtime", "a known-good plugin's tests do not run in the sandbox: "
        + (detail or tail or f"exit code {report.run.exit_code}")[:800], BUILD_FIX)


SANDBOX_FIX = ("install bubblewrap (`apt-get install bubblewrap`), or set SANDBOX_BACKEND=docker "
               "with a reachable Docker engine and the sandbox image (see docs/sandbox.md)")
