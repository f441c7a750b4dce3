"""What a change run changes, as its gates show it first (docs/portal.md, "Approvals"): the
version it follows and the one it becomes, the cases that asked for it, the tests it adds and
the tests it removes or weakens. A publish request carries these in its payload
(autocoder/engine/changing.py publish_change); the other gates of a change run read them
from the run's spec and the candidate's files."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from autocoder.engine.changing import test_losses
from runs.models import ApprovalRequest, Iteration, Run

_TEST_FUNCTION = re.compile(r"^\s*(?:async\s+)?def (test_\w+)", re.MULTILINE)
# How the change spec tells the model what the version in use answered
# (runs/services/changes.py _constraints).
_ANSWERED = "A call of "


@dataclass
class ChangeFacts:
    from_version: str
    version: str = ""  # the version it becomes when published ("" before the publish gate)
    reasons: list[str] = field(default_factory=list)  # "patch: a fix, ..."
    new_tests: list[tuple[str, list[str]]] = field(default_factory=list)  # path, functions
    tests_lost: list[str] = field(default_factory=list)
    cases: list[dict[str, Any]] = field(default_factory=list)  # command, input, expected
    answered: list[str] = field(default_factory=list)  # what the version in use answered
    base_check: str = ""  # whether the new tests failed on the version in use


def change_facts(approval: ApprovalRequest, run: Run,
                 iteration: Iteration | None) -> ChangeFacts | None:
    """What the change run of `approval` changes (None for a new plugin's run)."""
    if not run.base_files:
        return None
    spec = run.project.spec or {}
    stored = (approval.payload or {}).get("change") or {}
    files = iteration.files if iteration is not None else {}
    base = run.base_files
    new_tests = stored.get("new_tests") or sorted(
        p for p in files if p.startswith("tests/") and p.endswith(".py") and p not in base)
    return ChangeFacts(
        from_version=str(stored.get("from_version") or run.base_version),
        version=str(stored.get("version") or ""),
        reasons=list(stored.get("reasons") or []),
        new_tests=[(path, _TEST_FUNCTION.findall(files.get(path, ""))) for path in new_tests],
        tests_lost=list(stored.get("tests_lost") or (test_losses(base, files) if files else [])),
        cases=list(stored.get("cases") or _spec_cases(spec)),
        answered=[line for line in spec.get("constraints") or []
                  if str(line).startswith(_ANSWERED)],
        base_check=str(stored.get("base_check") or run.base_note))


def _spec_cases(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"command": command.get("name", ""), "input": example.get("input"),
             "expected": example.get("output")}
            for command in spec.get("commands") or []
            for example in command.get("examples") or []]
