"""Each role's prompt says what its reply is judged by, with the quality pipeline's own numbers
(autocoder/engine/judging.py), and the reviewer sees the candidate's score and coverage.

The numbers are checked against what the pipeline really uses: the job it sends to the sandbox
(pipeline._job: the lint rule set, the complexity bound, the line length) and the modules it
scores with, for each testing strategy; and a change of a number changes the prompt.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from autocoder.engine.prompting import PromptContext, build_messages
from autocoder.engine.quality_gate import threshold_points
from autocoder.engine.scaffold import scaffold_files
from autocoder.engine.spec import spec_from_dict
from autocoder.quality import pipeline, rules, score, stages
from autocoder.quality.strategies import STRATEGIES, strategy
from autocoder.sandbox.types import DEFAULT_LIMITS
from runs.models import Run
from runs.services import driving
from tests.engine.conftest import greeter_spec, prompts


def system_prompt(role: str, testing: str) -> str:
    spec = spec_from_dict({**greeter_spec(), "testing_strategy": testing,
                           "quality_threshold": strategy(testing).quality_threshold})
    ctx = PromptContext(spec=spec, iteration=1, files=scaffold_files(spec))
    return build_messages(role, ctx)[0].content


def the_pipelines_job() -> dict[str, Any]:
    return pipeline._job({}, None, "greeter", (), [], DEFAULT_LIMITS)


@pytest.mark.parametrize("testing", sorted(STRATEGIES))
def test_the_implementer_is_told_every_number_the_pipeline_judges_by(testing: str) -> None:
    text = system_prompt("implementer", testing)
    job, chosen = the_pipelines_job(), strategy(testing)
    spec = spec_from_dict({**greeter_spec(), "quality_threshold": chosen.quality_threshold})

    assert f"quality score reaches {threshold_points(spec)}/100" in text
    for part, label in (("tests", "tests"), ("coverage", "coverage"), ("lint", "lint"),
                        ("types", "types"), ("performance", "speed"), ("docs", "README")):
        assert f"{label} {score.WEIGHTS[part]}" in text
    families = [rule for rule in job["ruff_select"] if rule != rules.COMPLEXITY_RULE]
    assert f"ruff {', '.join(families)}, lines up to {job['line_length']}," in text
    lint_cost = f"-{score.LINT_COST * score.WEIGHTS['lint']:g}"
    assert f"{lint_cost} a finding" in text
    assert f"complexity at most {job['max_complexity']} a function" in text
    assert f"{lint_cost} for each one over" in text
    assert f"mypy on the package: -{score.TYPES_COST * score.WEIGHTS['types']:g} an error" in text
    assert f"-{score.DOCS_COST * score.WEIGHTS['docs']:g} a finding" in text
    assert f"under {stages.SLOW_EXAMPLE_S:g} s an example" in text
    if chosen.coverage_min:
        assert f"at least {chosen.coverage_min:.0%} of the package's lines" in text
    else:
        assert f"whole at {score.COVERAGE_FULL:.0%}" in text
    if chosen.large_inputs:
        sizes = " and ".join(str(n) for n in chosen.large_inputs)
        assert f"inputs {sizes} times larger" in text
        assert f"slower than n^{stages.GROWTH_LIMIT:g}" in text
    assert text.count("How the candidate is judged") == 1


@pytest.mark.parametrize("role", ["architect", "tester", "reviewer", "reflector"])
def test_every_judged_role_is_told_the_bar_and_the_coverage(role: str) -> None:
    text = system_prompt(role, "comprehensive")
    assert "quality score reaches 85/100" in text
    if role == "reviewer":  # beside the candidate's own coverage, in its checks
        assert "score and coverage are under" in text
    elif role == "tester":  # in its brief
        assert "at least 80% of the plugin's lines" in text
    else:
        assert "at least 80% of the package's lines" in text
    if role == "architect":
        assert f"complexity at most {rules.MAX_COMPLEXITY} a function" in text
    assert "How the candidate is judged" not in system_prompt("analyst", "comprehensive")


def test_a_number_changed_in_the_pipeline_changes_the_prompt(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rules, "MAX_COMPLEXITY", 7)
    monkeypatch.setattr(score, "WEIGHTS", {**score.WEIGHTS, "docs": 20})
    text = system_prompt("implementer", "basic")
    assert "complexity at most 7 a function" in text and "README 20" in text


@pytest.mark.django_db
@pytest.mark.slow
def test_the_reviewer_sees_the_candidates_score_and_coverage(
        start_run: Callable[..., Run]) -> None:
    spec = greeter_spec(testing_strategy="comprehensive")
    run = driving.run_drive(run_id=start_run("success", spec=spec).id)

    quality = run.iterations.get().quality
    coverage = next(s for s in quality["stages"] if s["stage"] == "coverage")["detail"]
    (review,) = prompts(run, "reviewer")
    assert f"Quality score: {quality['score']}/100 (tests " in review
    system = run.llm_calls.get(role="reviewer").messages[0]["content"]
    assert "the quality score reaches 85/100" in system
    assert (f"Line coverage: {coverage['line_rate']:.0%}, the strategy needs 80%"
            in review)
