"""A change run's first look at the version in use (autocoder/engine/changing.py): before the
first plan, the new regression tests run once on the unchanged version. They should fail there
(the change is needed); when they already pass, the run says so in plain words and goes on:
the person approving decides.
"""

from __future__ import annotations

from autocoder.engine.changing import (
    base_of,
    base_version,
    regression_path,
    start_files,
    test_asserts,
)
from autocoder.engine.checking import _installation_fault
from autocoder.engine.pending import BaseCheck
from autocoder.engine.steps import Step, setting
from autocoder.sandbox.types import SandboxError


def base_check_due(step: Step) -> bool:
    """Once per change run, before its first plan (a re-plan of the first attempt too, until
    the note is written)."""
    return bool(base_of(step.run)) and step.number == 1 and \
        not step.run.base_note and "base_check" not in step.pending


def base_check(step: Step) -> BaseCheck:
    """Run the new regression tests on the unchanged version once and say what happened:
    they should fail (the change is needed); when they pass, the person deciding is told the
    change may not be needed (the run goes on: they decide)."""
    from autocoder.sandbox import Limits
    from autocoder.sandbox.pytest_runner import run_pytest

    base = base_of(step.run)
    path = regression_path(base)
    files = start_files(step.spec, base)
    limits = Limits(timeout_s=float(setting("ENGINE_SANDBOX_TIMEOUT_S", 60)),
                    memory_mb=int(setting("ENGINE_SANDBOX_MEMORY_MB", 512)))
    try:
        report = run_pytest(dict(files), limits=limits, test_paths=[path],
                            cancel_check=step.cancelled)
    except SandboxError as error:
        raise _installation_fault(error) from error
    outcomes = {o.nodeid: o.outcome for o in report.outcomes}
    wanted = [f"{path}::{name}" for name in test_asserts(files[path])]
    passing = [node for node in wanted if outcomes.get(node) == "passed"]
    version = base_version(step.run) or "in use"
    if wanted and len(passing) == len(wanted):
        words = ("This input already gives the expected answer" if len(wanted) == 1 else
                 "These inputs already give the expected answers")
        note = f"{words} with version {version}: the change may not be needed."
    elif passing:
        note = (f"The new tests fail on version {version}, as expected, except "
                f"{len(passing)} of {len(wanted)} cases that already give the expected answer.")
    elif not any(node in outcomes for node in wanted):
        tail = str(report.stored().get("output_tail", "")).strip()[-300:]
        note = f"The new tests could not run on version {version} ({tail or 'no result'})."
    else:
        note = (f"The new test fails on version {version}, as expected." if len(wanted) == 1
                else f"The new tests fail on version {version}, as expected.")
    return {"note": note, "version": version, "path": path, "tests": len(wanted),
            "already_passing": len(passing)}
