"""What a candidate's code is compared with: another attempt of the run, the version in use
(a change run starts from it: runs/services/changes.py), or nothing (the whole plugin).

The run page's "Compare with" and every gate's diff take their base from here, so a change
run is compared with the version the team uses wherever code is compared (docs/portal.md,
"Approvals")."""

from __future__ import annotations

from dataclasses import dataclass

from runs.models import ApprovalRequest, Iteration, Run

VERSION_IN_USE = "version"  # ?against=version
NOTHING = "0"


@dataclass(frozen=True)
class Baseline:
    """The code a candidate is compared with; `since` ends "N lines added, M removed ..."."""

    key: str  # the ?against= value: an attempt's number, VERSION_IN_USE
    label: str  # what "Compare with" offers: "attempt 2", "version 1.0.0, the one in use"
    since: str  # "since attempt 2", "compared with version 1.0.0, the one in use"
    files: dict[str, str]
    number: int | None = None  # the attempt's number; None for the version in use


def is_change_run(run: Run) -> bool:
    return bool(run.base_files)


def version_in_use(run: Run) -> Baseline | None:
    if not run.base_files:
        return None
    number = run.base_version or "in use"
    label = f"version {number}, the one in use" if run.base_version else "the version in use"
    return Baseline(key=VERSION_IN_USE, label=label, since=f"compared with {label}",
                    files=dict(run.base_files))


def attempt_baseline(iteration: Iteration) -> Baseline:
    return Baseline(key=str(iteration.number), label=f"attempt {iteration.number}",
                    since=f"since attempt {iteration.number}", files=dict(iteration.files),
                    number=iteration.number)


def baseline_for(run: Run, against: str | None, *, current: int,
                 default: str | None = None) -> Baseline | None:
    """The base `against` names ("version", an attempt's number, "0" for nothing); when it
    names none, `default`, else the attempt before `current`, else the version in use."""
    key = against if against is not None and (against == VERSION_IN_USE or against.isdigit()
                                              ) else default
    if key is None:
        key = str(current - 1) if current > 1 else VERSION_IN_USE
    if key == VERSION_IN_USE:
        return version_in_use(run)
    number = int(key)
    if number <= 0 or number == current:
        return None
    found = Iteration.objects.filter(run=run, number=number).only("number", "files").first()
    return attempt_baseline(found) if found is not None else None


def gate_default(approval: ApprovalRequest, run: Run) -> str:
    """What a gate compares with unless the reviewer picks another base: a change run's gates
    the version in use (what the team would get); a new plugin's publish request nothing (the
    whole plugin), its other gates the attempt before."""
    if is_change_run(run):
        return VERSION_IN_USE
    if approval.kind == ApprovalRequest.Kind.PUBLISH:
        return NOTHING
    return str(approval.iteration - 1) if approval.iteration > 1 else NOTHING


def baseline_choices(run: Run, current: int, numbers: list[int]) -> list[tuple[str, str]]:
    """What "Compare with" offers: the version in use (for a change run), nothing, and each
    other attempt (`numbers`: the run's attempts)."""
    choices = []
    base = version_in_use(run)
    if base is not None:
        choices.append((base.key, base.label))
    choices.append((NOTHING, "nothing (all new)"))
    choices.extend((str(n), f"attempt {n}") for n in numbers if n != current)
    return choices
