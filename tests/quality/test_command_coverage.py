"""Which commands the tests run (issue 44; docs/engine.md, "The quality pipeline"): a command
counts as run when a test calls it through `on_command` in any of the usual ways, and not
because a test merely names it. The sandbox runs are real (the plugin runtime)."""

from __future__ import annotations

import textwrap

import pytest

from autocoder.quality.pipeline import run_quality
from autocoder.quality.stages import commands_not_run

# The dispatch of the upload in the issue: the only `if` comparing the command's name guards
# the error, so its body never runs when a test calls the command as it should.
GUARDED = textwrap.dedent('''\
    """Counts words."""

    from __future__ import annotations

    from typing import Any


    class Plugin:
        def on_command(self, name: str, payload: dict[str, Any]) -> dict[str, Any]:
            if name != "count-words":
                raise ValueError(f"unknown command: {name!r}")
            return {"words": len(str(payload.get("text", "")).split())}
    ''')
MANIFEST = textwrap.dedent('''\
    [plugin]
    name = "{name}"
    version = "0.1.0"
    summary = "Test plugin."
    entry = "{package}.plugin:Plugin"
    ''')


def _command(name: str) -> str:
    return (f'\n[[commands]]\nname = "{name}"\ndescription = "{name}"\n'
            f'examples = [{{input = {{text = "a"}}, output = {{text = "a"}}}}]\n')


def _plugin(name: str, commands: list[str], code: str, tests: str) -> dict[str, str | bytes]:
    package = name.replace("-", "_")
    return {"plugin.toml": MANIFEST.format(name=name, package=package)
            + "".join(_command(c) for c in commands),
            f"{package}/__init__.py": "", f"{package}/plugin.py": code,
            "tests/__init__.py": "", "tests/test_plugin.py": textwrap.dedent(tests),
            "README.md": f"# {name}\n"}


ONLY_TEST = {
    "at the top": ("from word_count.plugin import Plugin\n\n\ndef test_counts():\n"
                   "    assert Plugin().on_command('count-words', {'text': 'a b c'})"
                   " == {'words': 3}\n"),
    "in the test": ("def test_counts():\n    from word_count.plugin import Plugin\n\n"
                    "    assert Plugin().on_command('count-words', {'text': 'a b c'})"
                    " == {'words': 3}\n"),
    "in a conftest fixture": ("def test_counts(plugin):\n"
                              "    assert plugin.on_command('count-words', {'text': 'a b c'})"
                              " == {'words': 3}\n"),
}
CONFTEST = ("import pytest\n\nfrom word_count.plugin import Plugin\n\n\n@pytest.fixture\n"
            "def plugin():\n    return Plugin()\n")


@pytest.mark.parametrize("where", ONLY_TEST)
def test_the_only_test_calling_the_command_counts_even_behind_a_guarding_if(where: str) -> None:
    """Wherever the test imports the plugin: the calls are noted from the start."""
    files = _plugin("word-count", ["count-words"], GUARDED, ONLY_TEST[where])
    if where == "in a conftest fixture":
        files["tests/conftest.py"] = CONFTEST
    report = run_quality(files, strategy="basic")
    coverage = report.stage("coverage")
    assert report.test_report.passed == 1
    assert coverage.detail["uncovered_commands"] == [], coverage.as_dict()
    assert not any("no test runs" in f.message for f in coverage.findings)
    assert report.parts["coverage"] > 0


CASES = textwrap.dedent('''\
    """Changes text."""

    from __future__ import annotations

    from typing import Any


    class Plugin:
        def on_command(self, name: str, payload: dict[str, Any]) -> dict[str, Any]:
            text = str(payload.get("text", ""))
            match name:
                case "shout":
                    return {"text": text.upper()}
                case "whisper":
                    return {"text": text.lower()}
                case "title-case" | "snake-case" | "reverse":
                    return {"text": self.convert(name, text)}
            raise ValueError(f"unknown command: {name!r}")

        def convert(self, name: str, text: str) -> str:
            if name == "title-case":
                return text.title()
            if name == "snake-case":
                return text.lower().replace(" ", "_")
            return text[::-1]
    ''')
CASES_TESTS = '''\
    import pytest

    from case_tools.plugin import Plugin

    COMMANDS = ["shout", "whisper", "title-case", "snake-case", "reverse"]


    @pytest.fixture
    def plugin():
        return Plugin()


    def test_shout():
        assert Plugin().on_command("shout", {"text": "hi"}) == {"text": "HI"}


    def test_whisper(plugin):
        assert plugin.on_command("whisper", {"text": "HI"}) == {"text": "hi"}


    @pytest.mark.parametrize("command, expected", [("title-case", "A B"), ("snake-case", "a_b")])
    def test_cases(plugin, command, expected):
        assert plugin.on_command(command, {"text": "a b"})["text"] == expected


    def test_every_command_is_listed():  # names `reverse` without running it
        assert "reverse" in COMMANDS
    '''


def test_a_direct_call_a_fixture_and_a_parametrized_name_count_and_a_mere_name_does_not() -> None:
    files = _plugin("case-tools", ["shout", "whisper", "title-case", "snake-case", "reverse"],
                    CASES, CASES_TESTS)
    report = run_quality(files, strategy="basic")
    coverage = report.stage("coverage")
    assert report.test_report.passed == 5
    assert coverage.detail["uncovered_commands"] == ["reverse"], coverage.as_dict()
    assert [f.message for f in coverage.findings if f.where == "reverse"] == [
        "no test runs the command `reverse`: add tests for it"]


HANDLERS = textwrap.dedent('''\
    class Plugin:
        def on_command(self, name, payload):
            if name != "count-words":
                raise ValueError(name)
            return self.count_words(payload)

        def count_words(self, payload):
            return {"words": len(payload["text"].split())}

        def top_word(self, payload):
            return {"word": max(payload["text"].split())}
    ''')


def _lines(*numbers: int) -> dict[str, set[int]]:
    return {"pkg/plugin.py": set(numbers)}


def test_the_decision_counts_calls_then_handlers_and_names_only_when_calls_went_unnoted() -> None:
    files: dict[str, str | bytes] = {
        "pkg/plugin.py": HANDLERS,
        "tests/test_plugin.py": '@pytest.mark.parametrize("c", ["count-words", "top-word"])\n'}
    both = ["count-words", "top-word"]
    # Called through on_command: run, whatever the code around it looks like.
    assert commands_not_run(both, called={"count-words"}, files=files, executed=_lines(2, 4, 5),
                            package="pkg") == ["top-word"]
    # A test that calls the handler method itself runs the command too.
    assert commands_not_run(both, called=set(), files=files, executed=_lines(11),
                            package="pkg") == ["count-words"]
    # Calls not noted: a handler that never ran is not run, even though the tests name it.
    assert commands_not_run(both, called=None, files=files, executed=_lines(2, 4, 5, 8),
                            package="pkg") == ["top-word"]
    # Calls not noted and no handler: a test naming the command (here in a parametrize list).
    flat = {"pkg/plugin.py": GUARDED, "tests/test_plugin.py": files["tests/test_plugin.py"]}
    assert commands_not_run([*both, "other"], called=None, files=flat, executed=_lines(),
                            package="pkg") == ["other"]
