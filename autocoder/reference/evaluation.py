"""How well retrieval answers held-out API questions (autocoder/reference/questions.py)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TypedDict

from autocoder.reference.questions import QUESTIONS
from autocoder.reference.retrieval import reference_for

TOP = 5


class EvalResult(TypedDict):
    question: str
    expected: list[str]
    rank: int | None  # where the first expected entry came (None: not in the top)
    top: list[str]
    ms: float


class EvalDict(TypedDict):
    answered: int
    total: int
    top: int
    p50_ms: float
    results: list[EvalResult]


@dataclass
class EvalReport:
    answered: int = 0
    total: int = 0
    seconds: float = 0.0
    results: list[EvalResult] = field(default_factory=list)

    def as_dict(self) -> EvalDict:
        return {"answered": self.answered, "total": self.total, "top": TOP,
                "p50_ms": self.p50_ms(), "results": self.results}

    def p50_ms(self) -> float:
        times = sorted(r["ms"] for r in self.results)
        return times[len(times) // 2] if times else 0.0


def evaluate(questions: tuple[tuple[str, tuple[str, ...]], ...] = QUESTIONS) -> EvalReport:
    report = EvalReport(total=len(questions))
    started = time.monotonic()
    for question, expected in questions:
        begun = time.monotonic()
        hits = reference_for(question, limit=TOP)
        names = [hit.name for hit in hits]
        rank = next((i + 1 for i, name in enumerate(names) if name in expected), None)
        report.answered += rank is not None
        report.results.append({"question": question, "expected": list(expected),
                               "rank": rank, "top": names,
                               "ms": round((time.monotonic() - begun) * 1000, 1)})
    report.seconds = time.monotonic() - started
    return report
