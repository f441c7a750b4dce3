"""The quality pipeline's cost per candidate (`python manage.py quality_bench`): a plugin of
about 300 lines (twenty commands, their tests, a README) run through the pipeline N times under
the basic strategy; the p50 seconds of each stage and of the whole (docs/engine.md, "The
quality pipeline")."""

from __future__ import annotations

import json
import statistics
from typing import Any

from autocoder.quality.pipeline import run_quality
from autocoder.quality.report import STAGES

PACKAGE = "bench_kit"
GOAL_S = 15.0
# (command, input, output, body): each command is a method of about 25 lines with helpers
_COMMANDS = [
    ("word-count", {"text": "a b c"}, {"count": 3}, "len(words)"),
    ("line-count", {"text": "a b c"}, {"count": 1}, "len(text.splitlines())"),
    ("char-count", {"text": "a b c"}, {"count": 5}, "len(text)"),
    ("unique-words", {"text": "a b c"}, {"count": 3}, "len(set(words))"),
    ("longest-word", {"text": "a b c"}, {"count": 1}, "max((len(w) for w in words), default=0)"),
    ("vowel-count", {"text": "a b c"}, {"count": 1}, "sum(ch in 'aeiou' for ch in text)"),
    ("digit-count", {"text": "a b c"}, {"count": 0}, "sum(ch.isdigit() for ch in text)"),
    ("upper-count", {"text": "a b c"}, {"count": 0}, "sum(ch.isupper() for ch in text)"),
    ("space-count", {"text": "a b c"}, {"count": 2}, "text.count(' ')"),
    ("short-words", {"text": "a b c"}, {"count": 3}, "sum(len(w) < 4 for w in words)"),
    ("long-words", {"text": "a b c"}, {"count": 0}, "sum(len(w) > 6 for w in words)"),
    ("comma-count", {"text": "a b c"}, {"count": 0}, "text.count(',')"),
    ("dot-count", {"text": "a b c"}, {"count": 0}, "text.count('.')"),
    ("title-words", {"text": "a b c"}, {"count": 0}, "sum(w.istitle() for w in words)"),
    ("number-words", {"text": "a b c"}, {"count": 0}, "sum(w.isdigit() for w in words)"),
    ("repeated-words", {"text": "a b c"}, {"count": 0},
     "len(words) - len(set(words))"),
    ("blank-lines", {"text": "a b c"}, {"count": 0},
     "sum(not line.strip() for line in text.splitlines())"),
    ("first-length", {"text": "a b c"}, {"count": 1}, "len(words[0]) if words else 0"),
    ("last-length", {"text": "a b c"}, {"count": 1}, "len(words[-1]) if words else 0"),
    ("letter-count", {"text": "a b c"}, {"count": 3}, "sum(ch.isalpha() for ch in text)"),
]


def _method(command: str, body: str) -> str:
    name = command.replace("-", "_")
    words = "        words = _words(text)\n" if "words" in body else ""
    return f'''
    def {name}(self, payload: dict[str, Any]) -> dict[str, Any]:
        """The {command} command: one number about the text."""
        text = _text(payload)
{words}        count = {body}
        self._log(f"{command}: {{count}}")
        if count < 0:
            raise ValueError("a count cannot be negative")
        return {{"count": count}}
'''


def plugin_files() -> dict[str, str]:
    names = [c for c, _, _, _ in _COMMANDS]
    handlers = "".join(f'            "{c}": self.{c.replace("-", "_")},\n' for c in names)
    code = (
        '"""A bench plugin: counts things in a text."""\n\n'
        "from __future__ import annotations\n\n"
        "import re\n"
        "from typing import Any\n\n"
        '_WORD = re.compile(r"[A-Za-z0-9]+")\n\n\n'
        "def _text(payload: dict[str, Any]) -> str:\n"
        '    text = payload.get("text", "")\n'
        "    if not isinstance(text, str):\n"
        '        raise ValueError("text must be a string")\n'
        "    return text\n\n\n"
        "def _words(text: str) -> list[str]:\n"
        "    return _WORD.findall(text)\n\n\n"
        "class Plugin:\n"
        '    """Counts things in a text."""\n\n'
        "    def __init__(self) -> None:\n"
        "        self.api: Any = None\n\n"
        "    def on_initialize(self, api: Any) -> None:\n"
        "        self.api = api\n\n"
        "    def _log(self, message: str) -> None:\n"
        "        if self.api is not None:\n"
        "            self.api.log(message)\n\n"
        "    def on_command(self, name: str, payload: dict[str, Any]) -> dict[str, Any]:\n"
        "        handlers = {\n" + handlers + "        }\n"
        "        handler = handlers.get(name)\n"
        "        if handler is None:\n"
        '            raise ValueError(f"unknown command: {name!r}")\n'
        "        return handler(payload)\n"
        + "".join(_method(c, body) for c, _, _, body in _COMMANDS))
    tests = "import pytest\nfrom bench_kit.plugin import Plugin\n\nCASES = [\n" + "".join(
        f"    ({json.dumps(c)}, {json.dumps(i)}, {json.dumps(o)}),\n"
        for c, i, o, _ in _COMMANDS) + "]\n\n\n" + (
        '@pytest.mark.parametrize(("command", "payload", "expected"), CASES)\n'
        "def test_examples(command, payload, expected):\n"
        "    assert Plugin().on_command(command, payload) == expected\n\n\n"
        "def test_unknown_command():\n"
        "    with pytest.raises(ValueError):\n"
        '        Plugin().on_command("nope", {})\n\n\n'
        "def test_text_must_be_text():\n"
        "    with pytest.raises(ValueError):\n"
        '        Plugin().on_command("word-count", {"text": 3})\n')
    manifest = ('[plugin]\nname = "bench-kit"\nversion = "0.1.0"\n'
                'summary = "Counts things in a text."\nentry = "bench_kit.plugin:Plugin"\n')
    readme = ["# bench-kit\n\nCounts things in a text. Every command takes `text`.\n"]
    for command, given, output, _ in _COMMANDS:
        manifest += (f'\n[[commands]]\nname = "{command}"\ndescription = "Counts"\n'
                     f'examples = [{{input = {{text = "{given["text"]}"}}, output = '
                     f'{{count = {output["count"]}}}}}]\n[commands.input]\n'
                     'text = { type = "text", description = "The text" }\n')
        readme.append(f"## `{command}`\n\n`{json.dumps(given)}` gives `{json.dumps(output)}`.\n")
    readme.append("Use it from its form, on a schedule, or with curl:\n\n```sh\ncurl -X POST "
                  "https://portal.example/api/tools/acme/bench-kit/word-count -d "
                  "'{\"text\": \"a b c\"}'\n```\n\n```python\nfrom bench_kit.plugin import "
                  "Plugin\n\nprint(Plugin().on_command(\"word-count\", {\"text\": \"a b c\"}))"
                  "\n```\n")
    return {"plugin.toml": manifest, f"{PACKAGE}/__init__.py": '"""bench-kit."""\n',
            f"{PACKAGE}/plugin.py": code, "tests/__init__.py": "",
            "tests/test_plugin.py": tests, "README.md": "\n".join(readme)}


def code_lines(files: dict[str, str]) -> int:
    return sum(text.count("\n") for name, text in files.items() if name.endswith(".py"))


def bench(runs: int, *, strategy: str = "basic") -> dict[str, Any]:
    files = plugin_files()
    per_stage: dict[str, list[float]] = {name: [] for name in STAGES}
    totals, scores = [], []
    for _ in range(runs):
        report = run_quality(dict(files), strategy=strategy)
        for stage in report.stages:
            per_stage[stage.stage].append(stage.seconds)
        totals.append(report.seconds)
        scores.append(report.score)
    p50 = {name: round(statistics.median(values), 3) for name, values in per_stage.items()}
    return {"runs": runs, "strategy": strategy, "plugin_lines": code_lines(files),
            "p50_s": p50, "p50_total_s": round(statistics.median(totals), 3),
            "max_total_s": round(max(totals), 3), "goal_s": GOAL_S,
            "within_goal": statistics.median(totals) <= GOAL_S, "scores": scores}
