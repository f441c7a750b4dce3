"""The README check and the score, without a sandbox (docs/engine.md, "The quality pipeline")."""

from __future__ import annotations

from autocoder.plugins.manifest import parse_manifest
from autocoder.quality import score
from autocoder.quality.docs_check import check_readme, runnable_blocks
from autocoder.quality.report import StageResult
from autocoder.sandbox.pytest_runner import TestReport
from autocoder.sandbox.types import RunResult

MANIFEST = parse_manifest('''
[plugin]
name = "post-note"
version = "0.1.0"
summary = "Posts a note."
entry = "post_note.plugin:Plugin"

[permissions]
hosts = ["hooks.example.com"]

[[settings]]
name = "channel"
description = "Where to post"

[[commands]]
name = "post"
description = "Posts"
examples = [{input = {text = "hi"}, output = {posted = true}}]
[commands.input]
text = { type = "text", description = "What to post" }
''')


def _messages(readme: str | None) -> list[str]:
    return [f.message for f in check_readme(readme, MANIFEST)]


def test_the_readme_must_name_what_the_manifest_declares_and_nothing_else() -> None:
    good = ("# post-note\n\n## `post`\n\nPosts `text` to hooks.example.com, in the team's "
            "`channel`. Run it from its form, on a schedule, or with curl.\n")
    assert _messages(good) == []
    assert _messages(None) == ["there is no README.md: write one from plugin.toml"]
    lying = "# post-note\n\n## `publish`\n\nPublishes a note.\n\n## `setup`\n"
    said = " | ".join(_messages(lying))
    for words in ("command `post`", "`text`, an input", "setting `channel`",
                  "hooks.example.com", "command `publish` that plugin.toml does not declare",
                  "curl", "schedule"):
        assert words in said, words


def test_only_whole_python_examples_are_run() -> None:
    readme = ("```python\nprint(1)\n```\n\n```python\nplugin.on_command(...)\n```\n\n"
              "```sh\ncurl x\n```\n\n```py\nnot python at all(\n```\n")
    assert runnable_blocks(readme) == ["print(1)\n"]


def _stage(name: str, passed: bool, findings: int = 0, **detail: object) -> StageResult:
    from autocoder.quality.report import Finding

    return StageResult(name, passed, [Finding(str(i)) for i in range(findings)], 0.0,
                       dict(detail))


def test_the_score_adds_up_its_visible_parts() -> None:
    run = RunResult(0, False, False, None, "", "", False, False, 1, "bwrap")
    tests = TestReport([], 3, 0, 0, 1.0, run)
    clean = {"tests": _stage("tests", True), "lint": _stage("lint", True),
             "types": _stage("types", True), "complexity": _stage("complexity", True),
             "coverage": _stage("coverage", True, line_rate=0.9, commands=2,
                                uncovered_commands=[]),
             "performance": _stage("performance", True, commands_timed=2, flagged=[]),
             "docs": _stage("docs", True)}
    assert score.total(score.parts(clean, tests)) == 100
    poor = {**clean, "lint": _stage("lint", False, 1),
            "coverage": _stage("coverage", False, 1, line_rate=0.5, commands=2,
                               uncovered_commands=["b"]),
            "performance": _stage("performance", False, 1, commands_timed=2, flagged=["a"]),
            "docs": _stage("docs", False, 2)}
    values = score.parts(poor, tests)
    assert set(values) == set(score.WEIGHTS) and sum(score.WEIGHTS.values()) == 100
    assert values["tests"] == 35 and values["performance"] == 7.5
    assert score.total(values) < 85
