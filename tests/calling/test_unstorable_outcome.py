"""What a plugin hands back holding a NUL or a lone surrogate (`\\ud800`), on the real bwrap
sandbox and the plugin runtime: the runner still writes its answer (a lone surrogate is not
UTF-8), and the outcome carries U+FFFD instead, in its error, its log lines, its answer and its
storage, so whoever saves it can (PostgreSQL keeps neither character)."""

from __future__ import annotations

from typing import Any

from autocoder.calling.invoke import CallOutcome, InvokeLimits, PluginCall, call_plugin
from autocoder.runtime.storable import MAX_DEPTH, storable_json, storable_text

FFFD = "\ufffd"
LIMITS = InvokeLimits(timeout_s=5, cpu_s=3, memory_mb=256)


def single(source: str, command: str = "go", **kwargs: Any) -> CallOutcome:
    files = {"solo/__init__.py": "", "solo/plugin.py": source}
    return call_plugin(PluginCall(files=files, entry="solo.plugin:Plugin", command=command,
                                  payload={}, **kwargs), LIMITS)


def clean(text: str) -> bool:
    return "\x00" not in text and not any("\ud800" <= c <= "\udfff" for c in text)


def test_an_error_and_log_lines_with_a_nul_and_a_lone_surrogate_come_back_replaced() -> None:
    outcome = single('''
class Plugin:
    def on_initialize(self, api):
        api.log("nul \\x00 here")
        api.log("half \\ud800 here")

    def on_command(self, name, payload):
        raise ValueError("bad \\x00 and \\udfff")
''')
    assert not outcome.ok and outcome.error_kind == "plugin_error", outcome
    assert outcome.error == f"The plugin reported an error: bad {FFFD} and {FFFD}"
    assert outcome.log_lines == [f"nul {FFFD} here", f"half {FFFD} here"]
    assert clean(outcome.detail)


def test_an_answer_and_a_storage_with_them_are_kept_replaced() -> None:
    outcome = single('''
class Plugin:
    def on_initialize(self, api):
        self.api = api

    def on_command(self, name, payload):
        self.api.storage["k\\x00"] = ["v\\x00"]
        return {"a\\x00": "b\\ud800c", "list": ["\\x00", 1, None, {"\\udbff": 2.5}]}
''')
    assert outcome.ok, outcome
    assert outcome.output == {f"a{FFFD}": f"b{FFFD}c",
                              "list": [FFFD, 1, None, {FFFD: 2.5}]}
    assert outcome.storage == {f"k{FFFD}": [f"v{FFFD}"]}


def test_an_answer_nested_too_deeply_is_bad_output_in_plain_words() -> None:
    outcome = single(f'''
class Plugin:
    def on_command(self, name, payload):
        value = 1
        for _ in range({MAX_DEPTH + 5}):
            value = [value]
        return value
''')
    assert not outcome.ok and outcome.error_kind == "bad_output"
    assert f"nested more than {MAX_DEPTH} levels deep" in outcome.error


def test_the_cleaning_keeps_everything_else() -> None:
    text = "Grüße 😀 \t\n \\x00 \\ud800"  # escapes as text, emoji as a real pair
    assert storable_text(text) == text
    value = {"n": [1, 2.5, True, None, "ok"], "t": {"u": "ü"}}
    assert storable_json(value) == value
