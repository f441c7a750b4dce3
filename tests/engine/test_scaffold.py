"""The plugin skeleton: deterministic files that follow the plugin contract, and acceptance tests
that real pytest runs (in a subprocess on a temporary plugin directory) against the skeleton."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from autocoder.engine.scaffold import (
    ACCEPTANCE_TEST_PATH,
    acceptance_nodeids,
    protected_paths,
    scaffold_files,
)
from autocoder.engine.spec import Spec, spec_from_dict

TRICKY = 'quotes " \'\'\' """ backslash \\ tab\t newline\n unicode ünï 日本 and a $dollar {brace}'


def make_spec(**overrides: Any) -> Spec:
    data: dict[str, Any] = {
        "name": "weekly-scheduler",
        "summary": "Spreads tasks over the days of a week.",
        "commands": [
            {"name": "generate-schedule", "description": "Assign tasks to days in order.",
             "examples": [
                 {"input": {"tasks": ["a", "b"], "days": ["mon", "tue"]},
                  "output": {"mon": ["a"], "tue": ["b"]}},
                 {"input": {"tasks": [], "days": ["mon"]}, "output": {"mon": []}},
             ]},
            {"name": "count", "description": "How many tasks.",
             "examples": [{"input": {"tasks": ["a", "b", "c"]}, "output": {"count": 3}}]},
        ],
        "constraints": ["No task twice."],
    }
    data.update(overrides)
    return spec_from_dict(data)


def write_plugin(root: Path, files: dict[str, str]) -> None:
    for path, content in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")


def run_pytest(root: Path) -> dict[str, str]:
    """Runs the plugin's tests like the sandbox does, returning outcome per node id."""
    env = {k: v for k, v in os.environ.items()
           if k not in {"DJANGO_SETTINGS_MODULE", "PYTHONPATH"}}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:django",
         "-rA"],
        cwd=root, env=env, capture_output=True, text=True, timeout=120,
    )
    outcomes: dict[str, str] = {}
    for line in proc.stdout.splitlines():
        for word in ("PASSED", "FAILED", "ERROR"):
            if line.startswith(word + " "):
                nodeid = line.split(" ", 1)[1].split(" - ", 1)[0].strip()
                outcomes[nodeid] = word
    assert outcomes, proc.stdout + proc.stderr
    return outcomes


def test_the_skeleton_has_the_contract_files() -> None:
    files = scaffold_files(make_spec())
    assert sorted(files) == sorted([
        "plugin.toml", "weekly_scheduler/__init__.py", "weekly_scheduler/plugin.py",
        "tests/__init__.py", ACCEPTANCE_TEST_PATH, "tests/conftest.py", "README.md",
    ])
    assert files["tests/__init__.py"] == ""


def test_scaffolding_is_deterministic() -> None:
    first, second = scaffold_files(make_spec()), scaffold_files(make_spec())
    assert first == second
    assert list(first) == list(second)
    assert scaffold_files(make_spec(summary="Something else.")) != first


def test_manifest_is_valid_toml_with_the_contract_fields() -> None:
    spec = make_spec(summary=TRICKY)
    manifest = tomllib.loads(scaffold_files(spec)["plugin.toml"])
    assert manifest["plugin"] == {"name": "weekly-scheduler", "version": "0.1.0",
                                  "summary": TRICKY, "entry": "weekly_scheduler.plugin:Plugin"}
    assert manifest["permissions"] == {"network": False, "filesystem": "none"}
    assert manifest["commands"] == [
        {"name": "generate-schedule", "description": "Assign tasks to days in order."},
        {"name": "count", "description": "How many tasks."},
    ]


def test_plugin_module_dispatches_one_method_per_command() -> None:
    source = scaffold_files(make_spec())["weekly_scheduler/plugin.py"]
    tree = ast.parse(source)
    plugin = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Plugin")
    methods = [n.name for n in plugin.body if isinstance(n, ast.FunctionDef)]
    assert methods == ["on_initialize", "on_event", "on_command", "generate_schedule", "count"]


def test_skeleton_behaviour(tmp_path: Path) -> None:
    write_plugin(tmp_path, scaffold_files(make_spec()))
    sys.path.insert(0, str(tmp_path))
    try:
        from weekly_scheduler.plugin import Plugin  # type: ignore[import-not-found]

        plugin = Plugin()
        assert plugin.on_initialize(object()) is None
        assert plugin.on_event("started", {}) is None
        with pytest.raises(ValueError, match="unknown command: 'nope'"):
            plugin.on_command("nope", {})
        with pytest.raises(NotImplementedError, match="count is not written yet"):
            plugin.on_command("count", {"tasks": []})
    finally:
        sys.path.remove(str(tmp_path))
        for name in [m for m in sys.modules if m.startswith("weekly_scheduler")]:
            del sys.modules[name]


def test_acceptance_tests_fail_on_the_skeleton_and_pass_on_a_real_plugin(tmp_path: Path) -> None:
    spec = make_spec()
    files = scaffold_files(spec)
    write_plugin(tmp_path, files)
    before = run_pytest(tmp_path)
    assert before == {nodeid: "FAILED" for nodeid in acceptance_nodeids(spec)}

    (tmp_path / "weekly_scheduler/plugin.py").write_text(
        "class Plugin:\n"
        "    def on_command(self, name, payload):\n"
        "        if name == 'generate-schedule':\n"
        "            out = {day: [] for day in payload['days']}\n"
        "            for task, day in zip(payload['tasks'], payload['days']):\n"
        "                out[day].append(task)\n"
        "            return out\n"
        "        if name == 'count':\n"
        "            return {'count': len(payload['tasks'])}\n"
        "        raise ValueError(name)\n"
    )
    after = run_pytest(tmp_path)
    assert after == {nodeid: "PASSED" for nodeid in acceptance_nodeids(spec)}


def test_any_json_value_round_trips_through_the_acceptance_tests(tmp_path: Path) -> None:
    """Outputs of every JSON kind, with quotes, backslashes and non-ASCII text, are compared
    exactly: a plugin returning them verbatim passes, and one returning a near miss fails."""
    outputs = [TRICKY, [1, 2.5, None, True, False], {"nested": {"deep": [{"x": "\\n"}]}}, 0,
               -1e-07, "", {}, [], None, 123456789012345678901234567890]
    spec = make_spec(commands=[{"name": "echo", "description": TRICKY, "examples": [
        {"input": {"value": value, "text": TRICKY}, "output": value} for value in outputs]}])
    files = scaffold_files(spec)
    ast.parse(files[ACCEPTANCE_TEST_PATH])
    write_plugin(tmp_path, files)
    plugin_py = tmp_path / "weekly_scheduler/plugin.py"
    plugin_py.write_text("class Plugin:\n    def on_command(self, name, payload):\n"
                         "        assert payload['text'] == " + repr(TRICKY) + "\n"
                         "        return payload['value']\n")
    assert set(run_pytest(tmp_path).values()) == {"PASSED"}
    plugin_py.write_text("class Plugin:\n    def on_command(self, name, payload):\n"
                         "        return [payload['value']]\n")
    assert set(run_pytest(tmp_path).values()) == {"FAILED"}


def test_docstrings_and_comments_survive_hostile_text() -> None:
    spec = make_spec(
        name="x1",
        summary=TRICKY + '"',
        commands=[{"name": "do-it", "description": TRICKY + "\\", "examples": [
            {"input": {}, "output": 1}]}],
    )
    files = scaffold_files(spec)
    tree = ast.parse(files["x1/plugin.py"])
    method = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "do_it")
    # The request is said once, in the prompt: the stub's docstrings are one line each.
    assert ast.get_docstring(method, clean=False) == "The do-it command."
    assert TRICKY not in files["x1/plugin.py"]
    ast.parse(files["x1/__init__.py"])
    assert tomllib.loads(files["plugin.toml"])["plugin"]["summary"] == TRICKY + '"'


def test_acceptance_node_ids_name_one_test_per_example() -> None:
    spec = make_spec()
    assert acceptance_nodeids(spec) == [
        "tests/test_acceptance.py::test_generate_schedule_example_1",
        "tests/test_acceptance.py::test_generate_schedule_example_2",
        "tests/test_acceptance.py::test_count_example_1",
    ]
    tree = ast.parse(scaffold_files(spec)[ACCEPTANCE_TEST_PATH])
    defined = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
    assert [nodeid.split("::")[1] for nodeid in acceptance_nodeids(spec)] == defined


def test_acceptance_file_says_it_is_generated_and_read_only() -> None:
    source = scaffold_files(make_spec())[ACCEPTANCE_TEST_PATH]
    header = source.split("\n\n", 1)[0]
    assert "generated from the requester's examples" in header and "READ-ONLY" in header


def test_protected_paths_cover_the_acceptance_tests_and_the_manifest() -> None:
    protected = protected_paths(make_spec())
    assert {ACCEPTANCE_TEST_PATH, "plugin.toml"} <= protected
    # The harness that decides what passing means is protected too.
    assert {"tests/conftest.py", "conftest.py", "pytest.ini", "pyproject.toml"} <= protected
    assert "weekly_scheduler/plugin.py" not in protected
    assert not any(p.startswith("tests/test_generated_") for p in protected)


def test_readme_documents_commands_examples_and_installing() -> None:
    readme = scaffold_files(make_spec())["README.md"]
    assert readme.startswith("# weekly-scheduler\n")
    for text in ("### `generate-schedule`", "Assign tasks to days in order.", "### `count`",
                 '"count": 3', "No task twice.", "pip install weekly-scheduler",
                 "from weekly_scheduler.plugin import Plugin"):
        assert text in readme
    examples = readme.split("```json\n")[1:]
    assert json.loads(examples[2].split("```")[0]) == {"input": {"tasks": ["a", "b", "c"]},
                                                       "output": {"count": 3}}


def test_return_annotation_follows_the_examples() -> None:
    assert "-> dict:" in scaffold_files(make_spec())["weekly_scheduler/plugin.py"]
    spec = make_spec(commands=[{"name": "n", "examples": [{"input": {}, "output": 3}]}])
    source = scaffold_files(spec)["weekly_scheduler/plugin.py"]
    assert "def n(self, payload: dict) -> Any:" in source


def test_the_readmes_python_example_runs_as_written_and_names_no_placeholder_host() -> None:
    """The README's snippet calls the first command with its first example, and works as
    pasted; no `YOUR-AUTOCODER` host is left to guess."""
    spec = make_spec()
    readme = scaffold_files(spec)["README.md"]
    assert "YOUR-AUTOCODER" not in readme and '"COMMAND"' not in readme
    snippet = readme.split("```python\n")[-1].split("```")[0]
    assert 'plugin.on_command("generate-schedule", {' in snippet
    call = snippet.rsplit("plugin.on_command(", 1)[1].rsplit(")", 1)[0]
    name, payload = call.split(", ", 1)
    assert json.loads(name) == "generate-schedule"
    assert json.loads(payload) == spec.commands[0].examples[0].input


def test_the_readmes_commands_call_a_command_with_an_example_not_an_empty_body() -> None:
    """Issue 48: a first command without an example printed `-d '{}'`, which failed."""
    spec = make_spec(commands=[
        {"name": "reset", "description": "Starts over.", "examples": []},
        {"name": "count", "description": "How many tasks.",
         "examples": [{"input": {"tasks": ["a"]}, "output": {"count": 1}}]}])
    readme = scaffold_files(spec)["README.md"]
    assert "-d '{}'" not in readme
    assert "/count \\" in readme and '{"tasks": ["a"]}' in readme
