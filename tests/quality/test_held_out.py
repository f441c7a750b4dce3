"""The quality pipeline on ten held-out plugins (tests/quality/plugins/): each defect is named by
the stage that should name it, and nothing else fails; the clean plugin passes every stage.
docs/engine.md, "The quality pipeline"."""

from __future__ import annotations

import io
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from django.core.management import call_command

from autocoder.quality.pipeline import run_quality
from autocoder.quality.report import STAGES, QualityReport
from autocoder.sandbox.pytest_runner import run_pytest
from config.management.commands.quality_scan import read_plugin_dir

PLUGINS = Path(__file__).with_name("plugins")
# folder: (strategy, the stages that must fail, words the findings of the first one must hold)
EXPECTED: dict[str, tuple[str, set[str], tuple[str, ...]]] = {
    "clean_words": ("stress", set(), ()),
    "quadratic": ("stress", {"performance"}, ("running-totals", "faster than its input")),
    "untested_command": ("basic", {"coverage"}, ("whisper",)),
    "lint_error": ("basic", {"lint"}, ("F401", "E711")),
    "type_error": ("basic", {"types"}, ("item_counter/plugin.py", "Incompatible return value")),
    "readme_lies": ("basic", {"docs"}, ("farewell", "`greet`")),
    "complex_function": ("basic", {"complexity"}, ("letter", "grader/plugin.py")),
    "failing_test": ("basic", {"tests"}, ("test_add", "AssertionError")),
    "readme_example_fails": ("basic", {"docs"}, ("example 1 fails", "KeyError")),
    "low_coverage": ("comprehensive", {"coverage"}, ("45%", "80%")),
}


def _scan(folder: str) -> QualityReport:
    return run_quality(read_plugin_dir(PLUGINS / folder), strategy=EXPECTED[folder][0])


def _scan_command(folder: str) -> dict[str, Any]:
    out = io.StringIO()
    call_command("quality_scan", str(PLUGINS / folder), "--json", stdout=out)
    return json.loads(out.getvalue().strip().splitlines()[-1])


def test_each_defect_is_named_by_its_stage_and_the_clean_plugin_passes() -> None:
    """Also: `quality_scan --json` prints the same verdicts, and the tests stage's report is
    the one run_pytest gives."""
    assert sorted(p.name for p in PLUGINS.iterdir() if p.is_dir()) == sorted(EXPECTED)
    with ThreadPoolExecutor(max_workers=2) as pool:
        plain = pool.submit(run_pytest, read_plugin_dir(PLUGINS / "failing_test"))
        scanned = pool.submit(_scan_command, "lint_error")
        reports = dict(zip(EXPECTED, pool.map(_scan, EXPECTED), strict=True))
    data = scanned.result()
    assert [(s["stage"], s["passed"]) for s in data["stages"]] == [
        (s.stage, s.passed) for s in reports["lint_error"].stages]
    lint = next(s for s in data["stages"] if s["stage"] == "lint")
    assert {"message", "where"} <= set(lint["findings"][0]) and 0 <= data["score"] < 100
    assert [(o.nodeid, o.outcome) for o in reports["failing_test"].test_report.outcomes] == \
        [(o.nodeid, o.outcome) for o in plain.result().outcomes]
    assert reports["failing_test"].test_report.pass_rate == plain.result().pass_rate
    for folder, (_, failing, words) in EXPECTED.items():
        report = reports[folder]
        assert [s.stage for s in report.stages] == list(STAGES)
        failed = {s.stage for s in report.stages if not s.passed}
        assert failed == failing, (folder, [s.as_dict() for s in report.stages])
        for stage in failing:
            said = " ".join(f"{f.where} {f.message}" for f in report.stage(stage).findings)
            assert all(word in said for word in words), (folder, said)
            assert stage in report.prompt_findings(4000)
        if not failing:
            assert report.score == 100 and report.prompt_findings(4000) == ""
        else:
            assert report.score < 100
    curve = reports["quadratic"].stage("performance").detail["curves"]["running-totals"]
    assert [size for size, _ in curve][:3] == [1, 10, 100]
    assert reports["failing_test"].test_report.failed == 1


def test_the_issues_plugin_scores_clearly_below_85_and_gets_safe_fixes() -> None:
    """Three trivial tests pass, but it fails lint, one command is never tested, the other is
    quadratic, and the README is the template; its code is badly formatted."""
    files = read_plugin_dir(PLUGINS / "quadratic")
    files["plugin.toml"] = str(files["plugin.toml"]) + (
        '\n[[commands]]\nname = "average"\ndescription = "The mean"\n'
        'examples = [{input = {numbers = [1, 3]}, output = {mean = 2.0}}]\n')
    code = str(files["running_totals/plugin.py"])
    code = code.replace("from typing import Any\n", "import sys, os\nfrom typing import Any\n")
    code = code.replace('"running-totals": self.running_totals',
                        '"running-totals": self.running_totals, "average": self.average')
    files["running_totals/plugin.py"] = code + (
        "\n    def average(self, payload: dict[str, Any]) -> dict[str, Any]:\n"
        "        numbers = payload['numbers']\n"
        "        return {'mean':sum(numbers)/len(numbers)}\n")
    files["tests/test_plugin.py"] = (
        "def test_one():\n    assert True\n\n\ndef test_two():\n    assert 1 == 1\n\n\n"
        "def test_three():\n    assert [] == []\n")
    files["README.md"] = ("# running-totals\n\nRunning totals of numbers.\n\n## Commands\n\n"
                          "### `running-totals`\n\n### `average`\n\nInputs: `numbers`.\n")
    report = run_quality(files, strategy="stress")
    failed = {s.stage for s in report.stages if not s.passed}
    assert {"lint", "coverage", "performance", "docs"} <= failed, report.as_dict()
    assert report.test_report.pass_rate == 1.0 and report.score < 80, report.as_dict()
    assert sorted(report.stage("coverage").detail["uncovered_commands"]) == [
        "average", "running-totals"]
    data = json.loads(json.dumps(report.as_dict()))
    assert data["score"] == report.score
    assert sum(data["parts"].values()) == pytest_approx(report.score)
    assert {s["stage"] for s in data["stages"]} == set(STAGES)
    fixed = report.fixed_files["running_totals/plugin.py"]
    assert "import os\nimport sys\n" in fixed and '{"mean": sum(numbers) / len(numbers)}' in fixed
    words = report.prompt_findings(4000)
    assert words.index("- coverage") < words.index("- performance") < words.index("- lint")
    assert len(report.prompt_findings(300)) <= 300


def pytest_approx(value: int) -> object:
    import pytest

    return pytest.approx(value, abs=0.5)
