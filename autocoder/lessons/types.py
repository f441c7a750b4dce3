"""Plain data exchanged with the engine: what a run learned and what retrieval returns."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ReflectionNote:
    """One reflection of the loop; `fixed_by_next` says the next iteration cleared the error.

    `reflection` is empty when the reflector was silent; then `failing_tests` (pytest node ids)
    and `fix_diff` (the unified diff of the fixing iteration) are what the lesson is built from.
    """

    iteration: int
    error_text: str
    failed_approach: str
    reflection: str
    fixed_by_next: bool
    fix_summary: str
    failing_tests: tuple[str, ...] = ()
    fix_diff: str = ""


@dataclass(frozen=True)
class RunSummary:
    team_id: int
    run_id: int
    spec_name: str
    spec_summary: str
    succeeded: bool
    final_approach: str
    final_iteration: int | None
    reflections: list[ReflectionNote] = field(default_factory=list)
    lessons_used: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class RetrievedLesson:
    id: int
    kind: str
    title: str
    avoidance_rule: str
    resolution: str
    error_signature: str
    similarity: float
    reliability: float
