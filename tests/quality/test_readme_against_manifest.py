"""The docs stage reads what the README says and compares it with plugin.toml both ways (issue
44; docs/engine.md, "The quality pipeline"): commands and settings the README mentions that do
not exist, and ones that exist but are not described, each a finding that costs points."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autocoder.engine.replies import merge_files, parse_reply
from autocoder.engine.scaffold import protected_paths, scaffold_files
from autocoder.engine.spec import spec_from_dict, spec_from_json
from autocoder.plugins.manifest import parse_manifest, read_manifest
from autocoder.quality import score
from autocoder.quality.docs_check import check_readme
from autocoder.quality.pipeline import run_quality
from autocoder.quality.report import StageResult
from autocoder.quality.stages import docs_stage
from autocoder.sandbox.pytest_runner import TestReport
from autocoder.sandbox.types import RunResult

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"
MANIFEST = parse_manifest('''
[plugin]
name = "weekly-planner"
version = "0.1.0"
summary = "Plans a week."
entry = "weekly_planner.plugin:Plugin"

[[settings]]
name = "timezone"
description = "The team's time zone"

[[commands]]
name = "generate-schedule"
description = "Places tasks on days"
examples = [{input = {tasks = []}, output = {schedule = {}}}]
[commands.input]
tasks = { type = "text", description = "The tasks" }

[[commands]]
name = "list-days"
description = "The days of the week"
examples = [{input = {}, output = {days = []}}]
''')
ACCURATE = """# weekly-planner

Plans a week with a first-fit, read-only approach: nothing is changed day-to-day.

## Commands

### `generate-schedule`

Places the `tasks` on the days.

### `list-days`

The days of the week.

## Settings

The team enters its settings when activating it: `timezone`.

Run it from its form, on a schedule, or with the `curl` command:

```sh
curl -X POST https://YOUR-PORTAL/api/tools/YOUR-TEAM/weekly-planner/generate-schedule \\
  -H "Content-Type: application/json" -d '{"tasks": []}'
```

An unknown command raises `ValueError`; pick a command, fill in its fields and press Run.
"""
# The same README, also documenting a command the plugin does not have and a setting it does
# not declare.
INVENTED = ACCURATE.replace(
    "### `list-days`", "### `export-calendar`\n\nAn .ics file of the week.\n\n### `list-days`"
).replace("`timezone`.", "`timezone` and `calendar_token` (secret).")


def _messages(readme: str) -> list[str]:
    return [f.message for f in check_readme(readme, MANIFEST)]


def _docs_points(readme: str) -> float:
    stage = docs_stage(check_readme(readme, MANIFEST), [], 0.0)
    return score.parts({"docs": stage, **_clean_others()}, _tests())["docs"]


def test_an_accurate_readme_scores_higher_than_one_that_invents_a_command_and_a_setting() -> None:
    assert _messages(ACCURATE) == []
    said = _messages(INVENTED)
    assert len(said) == 2, said
    assert "the README describes a command `export-calendar` that plugin.toml does not " \
           "declare" in said[0]
    assert "the README mentions a setting `calendar_token` that plugin.toml does not " \
           "declare" in said[1]
    assert _docs_points(ACCURATE) == score.WEIGHTS["docs"]
    assert _docs_points(INVENTED) < _docs_points(ACCURATE)


def test_a_readme_missing_a_real_command_or_setting_is_flagged() -> None:
    without = ACCURATE.replace("### `list-days`\n\nThe days of the week.\n", "").replace(
        "its settings when activating it: `timezone`", "nothing")
    said = _messages(without)
    assert any("does not describe the command `list-days`" in s for s in said), said
    assert any("does not name the setting `timezone`" in s for s in said), said
    # Named only inside a code block is not described.
    in_code = without + "\n```python\nplugin.on_command('list-days', {})\n```\n"
    assert any("`list-days`" in s for s in _messages(in_code))


@pytest.mark.parametrize("mention", [
    "### export-calendar\n\nExports.",  # a bare kebab-case heading
    "### export-calendar: an .ics file",  # a heading under Commands with words after it
    "It also has `export-calendar`.",  # a code span
    "The export-calendar command makes an .ics file.",  # the text, next to "command"
    "Two more commands: `export-calendar` and `sync`.",  # a list after "commands"
    "```python\nPlugin().on_command(\"export-calendar\", {})\n```",  # a call in a code block
    "```sh\ncurl https://X/api/tools/T/weekly-planner/export-calendar\n```",  # the tools API
])
def test_each_way_a_readme_names_a_command_is_read(mention: str) -> None:
    readme = ACCURATE.replace("## Settings", f"{mention}\n\n## Settings")
    said = " | ".join(_messages(readme))
    assert "a command `export-calendar` that plugin.toml does not declare" in said, said


@pytest.mark.parametrize("mention", [
    "Set the `calendar_token` setting first.",
    "- `calendar_token`: the calendar's token",  # a list item under the Settings heading
    "```python\napi.settings[\"calendar_token\"]\n```",
])
def test_each_way_a_readme_names_a_setting_is_read(mention: str) -> None:
    readme = ACCURATE.replace("Run it from its form", f"{mention}\n\nRun it from its form")
    said = " | ".join(_messages(readme))
    assert "a setting `calendar_token` that plugin.toml does not declare" in said, said


def test_ordinary_words_are_not_taken_for_commands_or_settings() -> None:
    readme = ACCURATE + (
        "\nA built-in, well-known, first-fit idea; the same command each time, `utf-8` text, "
        "the `Content-Type` and `x-api-key` headers, `pip install weekly-planner`.\n\n"
        "### Examples\n\nA missing setting raises `KeyError`; settings come from "
        "`api.settings`, each with a `name` and a `description`.\n")
    assert _messages(readme) == []


def _demo_files() -> dict[str, str]:
    """The bundled example plugin as the demo run leaves it: the scaffold, then every
    implementer and tester reply of docs/examples/weekly-scheduler.script.json."""
    spec = spec_from_json((EXAMPLES / "weekly-scheduler.spec.json").read_text())
    files = scaffold_files(spec)
    script = json.loads((EXAMPLES / "weekly-scheduler.script.json").read_text())
    for role in ("implementer", "tester"):
        for reply in script.get(role, []):
            files, _ = merge_files(files, parse_reply(reply).files,
                                   protected=protected_paths(spec))
    return files


def test_the_bundled_example_plugin_scores_full_marks_on_docs() -> None:
    files = _demo_files()
    assert check_readme(files["README.md"], read_manifest(files["plugin.toml"])) == []
    report = run_quality(dict[str, str | bytes](files), strategy="basic")
    docs = report.stage("docs")
    assert docs.passed and docs.findings == [] and docs.detail["examples_run"] >= 1
    assert report.parts["docs"] == score.WEIGHTS["docs"]


def test_a_generated_readme_with_settings_and_hosts_is_accurate() -> None:
    spec = spec_from_dict({
        "name": "post-note", "summary": "Posts a note to the team's channel.",
        "services": {"hosts": ["hooks.example.com"], "settings": [
            {"name": "channel", "description": "Where to post"},
            {"name": "api_key", "description": "The key", "secret": True}]},
        "commands": [{"name": "post-note", "description": "Posts the text.",
                      "examples": [{"input": {"text": "hi"}, "output": {"posted": True},
                                    "settings": {"channel": "#a"}}]}]})
    files = scaffold_files(spec)
    assert check_readme(files["README.md"], read_manifest(files["plugin.toml"])) == []


def _clean_others() -> dict[str, StageResult]:
    return {"tests": StageResult("tests", True), "lint": StageResult("lint", True),
            "types": StageResult("types", True), "complexity": StageResult("complexity", True),
            "coverage": StageResult("coverage", True, detail={"line_rate": 1.0, "commands": 1,
                                                              "uncovered_commands": []}),
            "performance": StageResult("performance", True, detail={"commands_timed": 1,
                                                                    "flagged": []})}


def _tests() -> TestReport:
    run = RunResult(0, False, False, None, "", "", False, False, 1, "bwrap")
    return TestReport([], 1, 0, 0, 1.0, run)
