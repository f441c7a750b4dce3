"""How far the checks of an upload are, in the words the version page uses."""

from __future__ import annotations

from dataclasses import dataclass

from marketplace.models import PluginVersion

# After this long in the queue the page says the workers are busy (and that leaving is fine).
CHECK_BUSY_AFTER_S = 20


@dataclass(frozen=True)
class CheckProgress:
    """How far the checks of an upload are, in the words the version page uses."""

    headline: str
    steps: list[tuple[str, str]]  # (label, "done" | "current" | "todo")
    busy: bool


CHECK_HEADLINES = {
    "queued": "Checking your plugin: waiting for a worker…",
    "safety": "Checking your plugin: the safety gate is reading its code…",
    "tests": "Checking your plugin: running its tests in the sandbox…",
    "build": "Checking your plugin: building the wheel and the sdist…",
}


def check_progress(version: PluginVersion) -> CheckProgress:
    from django.utils import timezone

    order = ["safety", "tests", "build"]
    step = version.check_step or "queued"
    at = order.index(step) if step in order else -1
    steps = [(PluginVersion.CheckStep(name).label,
              "done" if i < at else "current" if i == at else "todo")
             for i, name in enumerate(order)]
    started = version.check_started_at or version.created_at
    waited = (timezone.now() - started).total_seconds() if started else 0
    return CheckProgress(headline=CHECK_HEADLINES.get(step, CHECK_HEADLINES["queued"]),
                         steps=steps, busy=step == "queued" and waited > CHECK_BUSY_AFTER_S)
