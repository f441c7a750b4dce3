"""Faults of the installation: a part of the portal itself (not the model's code, not the
request) that keeps runs from working, such as no model set up, a broken plugin runtime or a
sandbox that cannot start.

A run that meets one is held (Run.Status.HELD): no iteration is charged, no loop-detector
event fires, no reviewer is asked and no lesson is written, and admins are told what to fix.
Held runs go on by themselves once `fault_of(part)` finds the part working again
(the workers' watchdog asks every minute). See docs/operating.md ("Held runs").
"""

from __future__ import annotations

from collections.abc import Callable

PART_NAMES: dict[str, str] = {
    "model": "model connection",
    # The model is set up but does not answer as it should (unreachable, a refused key, an
    # unknown model, rate limited, server errors): held runs wait for a real call to work.
    "model_reach": "model connection",
    "runtime": "plugin runtime",
    "sandbox": "sandbox",
}


class InstallationFault(Exception):
    """`part` of the installation does not work: `problem` says what, `fix` what to do."""

    def __init__(self, part: str, problem: str, fix: str) -> None:
        if part not in PART_NAMES:
            raise ValueError(f"unknown installation part {part!r}")
        super().__init__(part, problem, fix)
        self.part, self.problem, self.fix = part, problem, fix

    def __str__(self) -> str:
        return f"the {PART_NAMES[self.part]} is broken: {self.problem}. To fix it: {self.fix}"

    @property
    def headline_for_admins(self) -> str:
        return f"the {PART_NAMES[self.part]} is broken: {self.problem}"

    @property
    def headline(self) -> str:
        """Plain words for people who cannot fix it (requesters)."""
        if self.part == "model_reach":
            return "generation cannot reach the model; your admins have been told"
        if self.part == "model":
            return ("generation is not connected yet: your request is saved and waits in the "
                    "queue; your admins have been told")
        return ("the portal's installation needs a fix before generation can go on: your "
                "request is saved and waits in the queue; your admins have been told")


# Each part's check: returns the fault, or None when the part works. The app that owns the part
# registers it from its AppConfig.ready (config/apps.py, autocoder/llm/apps.py), as the
# watchdog's sweeps are (autocoder/heartbeat.py): this module imports no app, so it stays
# importable from anywhere and import-linter sees every arrow (docs/development.md, "Layers").
Check = Callable[[], InstallationFault | None]
_CHECKS: dict[str, Check] = {}


def check_register(part: str, check: Check) -> None:
    """`fault_of(part)` calls `check` from now on (one check per part; the last one wins)."""
    if part not in PART_NAMES:
        raise ValueError(f"unknown installation part {part!r}")
    _CHECKS[part] = check


def fault_of(part: str) -> InstallationFault | None:
    """The part's current fault, or None when it works (never raises for a failing check)."""
    try:
        check = _CHECKS[part]
    except KeyError:
        raise LookupError(f"no check is registered for the installation part {part!r}: is the "
                          "app that owns it in INSTALLED_APPS?") from None
    try:
        return check()
    except InstallationFault as fault:
        return fault
