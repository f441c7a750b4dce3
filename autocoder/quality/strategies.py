"""How hard a plugin is tested: the three strategies a requester picks in the interview
(docs/engine.md, "Testing strategies"). One place defines them; the interview, the spec, the
prompts and the quality pipeline read them from here.
"""

from __future__ import annotations

from dataclasses import dataclass

BASIC = "basic"
COMPREHENSIVE = "comprehensive"
STRESS = "stress"


@dataclass(frozen=True)
class Strategy:
    key: str
    label: str
    plain: str  # what a requester reads in the interview
    coverage_min: float  # line coverage the coverage stage asks for (0-1; 0: not checked)
    quality_threshold: float  # the run's threshold on the quality score (0-1 of 100)
    max_iterations: int
    property_tests: bool  # Hypothesis property-based tests are asked for
    large_inputs: tuple[int, ...]  # the performance stage's input multipliers beyond the examples


STRATEGIES: dict[str, Strategy] = {s.key: s for s in (
    Strategy(BASIC, "Basic",
             "Tests for the examples and the main cases. Quickest; fine for a simple helper.",
             coverage_min=0.0, quality_threshold=0.75, max_iterations=8,
             property_tests=False, large_inputs=()),
    Strategy(COMPREHENSIVE, "Comprehensive",
             "Every command, edge cases and errors are tested, and the tests must run at least "
             "80% of the code. Recommended when the plugin talks to another service or keeps "
             "secrets.",
             coverage_min=0.8, quality_threshold=0.85, max_iterations=10,
             property_tests=False, large_inputs=()),
    Strategy(STRESS, "Stress",
             "Everything in comprehensive, plus tests with many generated inputs and timing on "
             "inputs 10 and 100 times larger than the examples. Slowest; for plugins that handle "
             "big files or many rows.",
             coverage_min=0.8, quality_threshold=0.9, max_iterations=12,
             property_tests=True, large_inputs=(10, 100)),
)}


def strategy(key: str | None) -> Strategy:
    """The named strategy; an unknown or empty name is basic."""
    return STRATEGIES.get(key or BASIC, STRATEGIES[BASIC])


def default_strategy(*, talks_to_hosts: bool, has_secrets: bool) -> str:
    """Comprehensive for a plugin that reaches another system or holds secrets, else basic."""
    return COMPREHENSIVE if talks_to_hosts or has_secrets else BASIC
