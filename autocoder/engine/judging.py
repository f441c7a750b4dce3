"""What each role is told its reply is judged by (docs/llm.md, "What each role is told"): the
quality pipeline's own numbers, read from where the pipeline reads them (autocoder/quality:
the score's weights and costs, the lint rule set, the complexity bound, the strategies; the
quality gate's threshold), so a prompt can never state one bar while the pipeline holds another.
"""

from __future__ import annotations

from typing import Any

from autocoder.engine.quality_gate import threshold_points
from autocoder.engine.spec import Spec
from autocoder.quality import rules, score, stages
from autocoder.quality.strategies import strategy

_PARTS = (("tests", "tests"), ("coverage", "coverage"), ("lint", "lint"), ("types", "types"),
          ("performance", "speed"), ("docs", "README"))


def _lint_families() -> str:
    return ", ".join(rule for rule in rules.LINT_SELECT if rule != rules.COMPLEXITY_RULE)


def _points(cost: float, part: str) -> str:
    return f"{cost * score.WEIGHTS[part]:g}"


def _percent(share: float) -> str:
    return f"{share:.0%}"


def bar_text(spec: Spec, role: str, *, change: str = "", examples: str = "") -> str:
    """The lines of `role`'s prompt that say what its reply is judged by ("" for a role that
    is not judged); `change`: the version a change run changes, whose tests and the change's
    own (`examples`, its regression tests) are what must pass."""
    lines = {"implementer": _implementer, "tester": _tester, "architect": _architect,
             "reviewer": _reviewer, "reflector": _reflector}.get(role)
    if lines is None:
        return ""
    told = lines(spec)
    if change:  # every list starts with the pass rule
        told[0] = (f"- It passes when this change's examples ({examples}) and every test of "
                   f"version {change} pass and the quality score reaches "
                   f"{threshold_points(spec)}/100.")
    return "\n".join(["How the candidate is judged (the quality pipeline's own numbers):",
                      *told])


def _passes(spec: Spec) -> str:
    return (f"- It passes when every acceptance test passes and the quality score reaches "
            f"{threshold_points(spec)}/100.")


def _coverage(spec: Spec) -> str:
    chosen = strategy(spec.testing_strategy)
    if chosen.coverage_min <= 0:
        return (f"- Coverage: not required ({chosen.key} strategy); its score part is whole at"
                f" {_percent(score.COVERAGE_FULL)} of the package's lines, every command tested.")
    return (f"- Coverage: the tests must run at least {_percent(chosen.coverage_min)} of the"
            f" package's lines ({chosen.key} strategy) and every command.")


def _score_line() -> str:
    parts = ", ".join(f"{label} {score.WEIGHTS[part]}" for part, label in _PARTS)
    return f"- Score parts: {parts}; tests count the pass rate of all tests."


def _lint_lines() -> list[str]:
    return [
        f"- ruff {_lint_families()}, lines up to {rules.LINE_LENGTH}, `# noqa` not honoured:"
        f" -{_points(score.LINT_COST, 'lint')} a finding.",
        f"- McCabe complexity at most {rules.MAX_COMPLEXITY} a function (ruff"
        f" {rules.COMPLEXITY_RULE}): -{_points(score.LINT_COST, 'lint')} for each one over.",
        f"- mypy on the package: -{_points(score.TYPES_COST, 'types')} an error.",
    ]


def _speed(spec: Spec) -> str:
    chosen = strategy(spec.testing_strategy)
    line = f"- Each command under {stages.SLOW_EXAMPLE_S:g} s an example"
    if chosen.large_inputs:
        sizes = " and ".join(f"{n}" for n in chosen.large_inputs)
        line += (f"; on inputs {sizes} times larger, time growing slower than"
                 f" n^{stages.GROWTH_LIMIT:g}")
    return line + "."


def _readme() -> str:
    return ("- README.md names what plugin.toml declares (commands, inputs, settings, hosts),"
            " shows a curl call and a schedule, and its Python examples run:"
            f" -{_points(score.DOCS_COST, 'docs')} a finding.")


def _implementer(spec: Spec) -> list[str]:
    return [_passes(spec), _score_line(), _coverage(spec), *_lint_lines(), _speed(spec),
            _readme(), "- The host formats the code and sorts imports itself."]


def _tester(spec: Spec) -> list[str]:
    # The coverage a strategy requires is in the tester's brief (prompting.testing_text).
    covered = [] if strategy(spec.testing_strategy).coverage_min > 0 else [_coverage(spec)]
    return [_passes(spec), _score_line(), *covered,
            f"- ruff checks tests too ({_lint_families()}; `assert` is fine)."]


def _architect(spec: Spec) -> list[str]:
    return [_passes(spec), _coverage(spec),
            f"- McCabe complexity at most {rules.MAX_COMPLEXITY} a function: plan small typed"
            " functions (mypy checks them).", _speed(spec)]


def _reviewer(spec: Spec) -> list[str]:
    # The coverage the strategy needs is beside the candidate's own (quality_lines).
    return [_passes(spec),
            "- This candidate's score and coverage are under \"What the tests and the safety"
            " gate found\": ask only for what they do not already count."]


def _reflector(spec: Spec) -> list[str]:
    return [_passes(spec), _coverage(spec)]


def quality_lines(spec: Spec, quality: dict[str, Any]) -> list[str]:
    """A candidate's score and coverage in words, for the reviewer (from the checkpoint's
    quality: quality_gate.checkpoint_quality)."""
    if not quality:
        return []
    # The pages' list of parts ({"stage", "points", "weight"}), or the report's {name: points}.
    raw = quality.get("parts") or {}
    parts = ({str(p.get("stage")): p.get("points", 0) for p in raw if isinstance(p, dict)}
             if isinstance(raw, list) else dict(raw))
    shown = ", ".join(f"{label} {float(parts[part]):.3g}/{score.WEIGHTS[part]}"
                      for part, label in _PARTS if part in parts)
    lines = [f"Quality score: {quality.get('score', 0)}/100 ({shown})."]
    coverage: dict[str, Any] = next(
        (s for s in quality.get("stages", []) if s.get("stage") == "coverage"), {})
    detail = coverage.get("detail") or {}
    if "line_rate" in detail:
        wanted = float(detail.get("coverage_min") or 0)
        need = f", the strategy needs {_percent(wanted)}" if wanted else ""
        uncovered = detail.get("uncovered_commands") or []
        missing = f"; no test runs {', '.join(uncovered)}" if uncovered else ""
        lines.append(f"Line coverage: {_percent(float(detail['line_rate']))}{need}{missing}.")
    failed = [s.get("stage") for s in quality.get("stages", []) if not s.get("passed")]
    if failed:
        lines.append("Stages with findings: " + ", ".join(str(name) for name in failed) + ".")
    return lines
