"""One invocation of a plugin with the host API (autocoder/calling/invoke.py), on the real
bwrap sandbox and the plugin runtime: on_initialize, settings, storage, log, events, limits,
and what the outcome says when the plugin or its answer is wrong."""

from __future__ import annotations

import base64
import io
import json
import sys
from typing import Any

import pytest
from django.core.management import call_command

from autocoder.calling.invoke import (
    INVOKE_LIMITS,
    CallOutcome,
    InvokeLimits,
    PluginCall,
    call_plugin,
    storage_size,
)

SMALL = InvokeLimits(timeout_s=4, cpu_s=2, memory_mb=256, storage_kb=1, output_kb=8,
                     log_lines=5, log_line_chars=40)

NOTES = '''
class Plugin:
    def on_initialize(self, api):
        self.api = api
        self.initialized = getattr(self, "initialized", 0) + 1
        api.log("initialized with greeting " + api.settings.get("greeting", "(none)"))

    def on_command(self, name, payload):
        store = self.api.storage
        if name == "add":
            notes = store.get("notes", [])
            notes.append(payload["note"])
            store.set("notes", notes)
            return {"notes": notes, "initialized": self.initialized}
        if name == "greet":
            return {"text": self.api.settings["greeting"] + ", " + payload["name"]}
        if name == "fill":
            store.set("big", "x" * payload["size"])
            return {"kept": True}
        if name == "fill_quietly":
            try:
                store.set("big", "x" * payload["size"])
            except ValueError as exc:
                return {"refused": str(exc)}
            return {"refused": ""}
        if name == "forget":
            store.delete("notes")
            return {"keys": store.keys()}
        raise ValueError(f"unknown command {name!r}")

    def on_event(self, event, data):
        self.api.storage.set("last_event", {"event": event, "data": data})
'''


def notes_plugin(extra: str = "") -> dict[str, str]:
    return {"notes/__init__.py": "", "notes/plugin.py": NOTES + extra,
            "plugin.toml": '[plugin]\nname = "notes"\nentry = "notes.plugin:Plugin"\n'}


def call(command: str | None, payload: dict[str, Any] | None = None, *,
         files: dict[str, str] | None = None, limits: InvokeLimits = INVOKE_LIMITS,
         **kwargs: Any) -> CallOutcome:
    return call_plugin(PluginCall(files=files or notes_plugin(), entry="notes.plugin:Plugin",
                                  command=command, payload=payload or {}, **kwargs), limits)


def single(source: str, command: str = "go", payload: dict[str, Any] | None = None, *,
           limits: InvokeLimits = SMALL, **kwargs: Any) -> CallOutcome:
    files = {"solo/__init__.py": "", "solo/plugin.py": source}
    return call_plugin(PluginCall(files=files, entry="solo.plugin:Plugin", command=command,
                                  payload=payload or {}, **kwargs), limits)


def test_on_initialize_runs_before_each_call_and_sees_the_settings() -> None:
    first = call("greet", {"name": "Ana"}, settings={"greeting": "Hello"})
    assert first.ok, first
    assert first.output == {"text": "Hello, Ana"}
    assert first.log_lines == ["initialized with greeting Hello"]
    assert first.error == "" and first.error_kind == ""
    assert first.storage is None  # nothing changed: nothing to save
    second = call("add", {"note": "a"}, settings={"greeting": "Hi"})
    assert second.output["initialized"] == 1  # a fresh plugin per call, initialised once
    assert second.log_lines == ["initialized with greeting Hi"]
    assert 0 <= second.plugin_ms <= second.duration_ms


@pytest.mark.parametrize("change", ["api.settings['token'] = 'changed'",
                                    "api.settings |= {'token': 'changed'}",
                                    "api.settings.update(token='changed')",
                                    "del api.settings['token']"])
def test_settings_are_read_only(change: str) -> None:
    outcome = single("class Plugin:\n"
                     "    def on_initialize(self, api):\n"
                     f"        {change}\n"
                     "    def on_command(self, name, payload):\n"
                     "        return {}\n", settings={"token": "t"})
    assert (outcome.ok, outcome.error_kind) == (False, "plugin_error")
    assert "read-only" in outcome.error


@pytest.mark.usefixtures("on_each_backend")
def test_storage_round_trips_and_persists_across_calls_when_the_caller_saves_it() -> None:
    first = call("add", {"note": "milk"})
    assert first.ok and first.storage == {"notes": ["milk"]}
    second = call("add", {"note": "eggs"}, storage=first.storage)
    assert second.output["notes"] == ["milk", "eggs"]
    assert second.storage == {"notes": ["milk", "eggs"]}
    third = call("forget", storage=second.storage)
    assert third.output == {"keys": []} and third.storage == {}
    # without the caller saving it, nothing is remembered
    assert call("add", {"note": "tea"}).storage == {"notes": ["tea"]}


def test_storage_over_the_limit_is_refused_and_the_old_storage_kept() -> None:
    old = {"notes": ["keep me"]}
    outcome = call("fill", {"size": 2000}, storage=old, limits=SMALL)
    assert (outcome.ok, outcome.error_kind, outcome.storage) == (False, "storage_too_large", None)
    assert "api.storage is full" in outcome.error and "1024 bytes" in outcome.error
    assert "Nothing it changed in its storage was kept" in outcome.error
    fits = call("fill", {"size": 500}, storage=old, limits=SMALL)
    assert fits.ok and fits.storage is not None
    assert storage_size(fits.storage) <= 1024


def test_a_plugin_that_catches_the_full_storage_keeps_its_old_value() -> None:
    outcome = call("fill_quietly", {"size": 5000}, storage={"n": 1}, limits=SMALL)
    assert outcome.ok and "api.storage is full" in outcome.output["refused"]
    assert outcome.storage is None  # nothing was changed


def test_storage_takes_json_values_only() -> None:
    outcome = single("class Plugin:\n"
                     "    def on_initialize(self, api):\n"
                     "        self.api = api\n"
                     "    def on_command(self, name, payload):\n"
                     "        self.api.storage.set('when', {1, 2})\n")
    assert outcome.error_kind == "plugin_error"
    assert "only keep JSON values" in outcome.error


def test_storage_that_the_plugin_forges_past_the_limit_is_still_refused() -> None:
    # the plugin runs in the runner's process: it can bypass api.storage, not the host's check
    outcome = single("import sys\n"
                     "class Plugin:\n"
                     "    def on_initialize(self, api):\n"
                     "        self.api = api\n"
                     "    def on_command(self, name, payload):\n"
                     "        self.api.storage._text['big'] = '\"' + 'y' * 5000 + '\"'\n"
                     "        self.api.storage.changed = True\n"
                     "        return {}\n")
    assert (outcome.ok, outcome.error_kind, outcome.storage) == (False, "storage_too_large", None)


def test_events_reach_on_event_and_a_plugin_without_it_is_fine() -> None:
    outcome = call(None, {"version": "1.0.0"}, event="activated")
    assert outcome.ok and outcome.output is None
    assert outcome.storage == {"last_event": {"event": "activated", "data": {"version": "1.0.0"}}}
    assert outcome.log_lines == ["initialized with greeting (none)"]
    plain = single("class Plugin:\n"
                   "    def on_command(self, name, payload):\n"
                   "        return {}\n", command=None, event="schedule")
    assert (plain.ok, plain.output, plain.storage, plain.error) == (True, None, None, "")


def test_an_unknown_command_is_a_plugin_error_with_the_plugins_words() -> None:
    outcome = call("shout")
    assert (outcome.ok, outcome.error_kind) == (False, "plugin_error")
    assert outcome.error == "The plugin reported an error: unknown command 'shout'"
    assert outcome.storage is None
    assert "notes/plugin.py" in outcome.detail and "host.py" not in outcome.detail


def test_a_plugin_that_cannot_be_loaded_says_so() -> None:
    outcome = single("import not_a_library_we_have\n")
    assert outcome.error_kind == "plugin_error"
    assert outcome.error.startswith("The plugin could not be loaded: ModuleNotFoundError")


@pytest.mark.usefixtures("on_each_backend")
def test_a_plugin_that_exits_or_dies_gives_a_plain_error() -> None:
    exits = single("import sys\nclass Plugin:\n"
                   "    def on_command(self, name, payload):\n        sys.exit(3)\n")
    assert exits.error_kind == "plugin_error" and "SystemExit" in exits.error
    dies = single("import os\nclass Plugin:\n"
                  "    def on_command(self, name, payload):\n        os._exit(4)\n")
    assert dies.error_kind == "plugin_error"
    assert dies.error == "The plugin stopped without giving an answer (exit code 4)."


@pytest.mark.usefixtures("on_each_backend")
def test_a_plugin_that_runs_too_long_is_stopped_with_a_plain_message() -> None:
    sleepy = single("import time\nclass Plugin:\n"
                    "    def on_command(self, name, payload):\n        time.sleep(30)\n",
                    limits=InvokeLimits(timeout_s=1.5, cpu_s=5))
    assert (sleepy.ok, sleepy.error_kind) == (False, "timeout")
    assert sleepy.error == "The plugin took longer than 1.5 seconds and was stopped."
    assert sleepy.duration_ms < 10_000
    busy = single("class Plugin:\n    def on_command(self, name, payload):\n"
                  "        while True:\n            pass\n",
                  limits=InvokeLimits(timeout_s=20, cpu_s=1))
    assert (busy.ok, busy.error_kind) == (False, "cpu_limit")
    assert busy.error == "The plugin used all of its 1 second of processor time and was stopped."


@pytest.mark.usefixtures("on_each_backend")
def test_a_plugin_that_needs_too_much_memory_is_stopped() -> None:
    outcome = single("class Plugin:\n    def on_command(self, name, payload):\n"
                     "        blocks = []\n        while True:\n"
                     "            blocks.append(bytearray(32 * 1024 * 1024))\n",
                     limits=InvokeLimits(timeout_s=20, memory_mb=128))
    assert outcome.ok is False
    # one process over its address space meets MemoryError inside (a plugin error), the
    # job's total is stopped from outside: both say so in plain words
    assert outcome.error_kind in ("memory_limit", "plugin_error")
    assert "memory" in outcome.error.lower() or "MemoryError" in outcome.error


def test_an_answer_that_is_not_json_is_bad_output() -> None:
    outcome = single("class Plugin:\n    def on_command(self, name, payload):\n"
                     "        return {'when': {1, 2}}\n")
    assert (outcome.ok, outcome.error_kind, outcome.output) == (False, "bad_output", None)
    assert outcome.error.startswith("The plugin's answer is not JSON")
    nan = single("class Plugin:\n    def on_command(self, name, payload):\n"
                 "        return {'x': float('nan')}\n")
    assert nan.error_kind == "bad_output"


def test_an_answer_over_the_limit_is_refused() -> None:
    outcome = single("class Plugin:\n    def on_command(self, name, payload):\n"
                     "        return {'text': 'z' * 20000}\n")
    assert (outcome.ok, outcome.error_kind) == (False, "output_too_large")
    assert "the limit for one answer is 8 KB" in outcome.error


@pytest.mark.usefixtures("on_each_backend")
def test_a_forged_huge_result_file_is_output_too_large() -> None:
    outcome = single("import sys\nclass Plugin:\n    def on_command(self, name, payload):\n"
                     "        open('.autocoder/result.json', 'w').write('x' * 400000)\n"
                     "        sys.modules['__main__'].RESULT = '/tmp/elsewhere'\n"
                     "        return {}\n")
    assert (outcome.ok, outcome.error_kind) == (False, "output_too_large")


# The plugin runs in the runner's process: it can write the answer itself and send the
# runner's elsewhere.
FORGE = ("import sys\nclass Plugin:\n    def on_command(self, name, payload):\n"
         "        open('.autocoder/result.json', 'w').write({!r})\n"
         "        sys.modules['__main__'].RESULT = '/tmp/elsewhere'\n"
         "        return {{}}\n")


def test_a_forged_answer_is_checked_again_by_the_host() -> None:
    blames_the_portal = single(FORGE.format(
        '{"ok": false, "error_kind": "sandbox_unavailable", "error": "the portal is broken"}'))
    assert blames_the_portal.error_kind == "plugin_error"
    too_big = single(FORGE.format('{"ok": true, "output": "' + "q" * 20000 + '"}'))
    assert (too_big.ok, too_big.error_kind) == (False, "output_too_large")
    deep = single(FORGE.format('{"ok": true, "output": ' + "[" * 5000 + "]" * 5000 + "}"))
    assert (deep.ok, deep.error_kind) == (False, "bad_output")


def test_log_lines_are_capped_in_number_and_length() -> None:
    outcome = single("class Plugin:\n"
                     "    def on_initialize(self, api):\n        self.api = api\n"
                     "    def on_command(self, name, payload):\n"
                     "        for i in range(50):\n"
                     "            self.api.log(f'line {i} ' + 'w' * 100)\n"
                     "        return {}\n")
    assert outcome.ok
    assert len(outcome.log_lines) == 6
    assert outcome.log_lines[0] == "line 0 " + "w" * 33 + "..."
    assert outcome.log_lines[-1] == "... 45 more log lines were not kept"


@pytest.mark.usefixtures("on_each_backend")
def test_a_secret_setting_never_enters_the_sandbox_and_reading_it_says_how_to_send_it() -> None:
    """A secret's value stays on the host (api.http fills it in on a request to a declared
    host): in the sandbox the setting is named, reading it is a clear error, and its value is
    in no file, no environment variable and no argument the plugin can see."""
    secret = "sk-live-0123456789abcdef"
    source = ("import os\n"
              "class Plugin:\n"
              "    def on_initialize(self, api):\n"
              "        self.api = api\n"
              "    def on_command(self, name, payload):\n"
              "        if name == 'read':\n"
              "            return {'key': self.api.settings['key']}\n"
              "        if name == 'get':\n"
              "            return {'key': self.api.settings.get('key')}\n"
              "        needle = b'-'.join([b'sk', b'live', b'0123456789abcdef'])\n"
              "        seen = []\n"
              "        for top in ('/workdir', '/tmp', '/proc/self'):\n"
              "            for root, dirs, files in os.walk(top):\n"
              "                dirs[:] = [d for d in dirs if d not in ('task', 'fd', 'fdinfo',"
              " 'map_files', 'ns', 'net')]\n"
              "                for f in files:\n"
              "                    try:\n"
              "                        with open(os.path.join(root, f), 'rb') as h:\n"
              "                            if needle in h.read(1 << 20):\n"
              "                                seen.append(os.path.join(root, f))\n"
              "                    except OSError:\n"
              "                        pass\n"
              "        env = b' '.join(os.environb.values())\n"
              "        return {'seen': seen, 'in_env': needle in env, 'named': 'key' in"
              " self.api.settings, 'region': self.api.settings['region']}\n")
    settings = {"key": secret, "region": "eu"}
    looked = single(source, "look", settings=settings, secret_settings=["key"])
    assert looked.ok, looked
    assert looked.output == {"seen": [], "in_env": False, "named": True, "region": "eu"}
    for command in ("read", "get"):
        refused = single(source, command, settings=settings, secret_settings=["key"])
        assert refused.error_kind == "plugin_error"
        assert "'key' is a secret setting: its value never enters the sandbox" in refused.error
        assert "api.secret('key')" in refused.error
        assert secret not in json.dumps([refused.error, refused.detail, refused.log_lines])


@pytest.mark.usefixtures("on_each_backend")
def test_a_hostile_plugin_cannot_read_another_calls_storage_or_settings() -> None:
    first = call("add", {"note": "private-note-of-team-a"}, settings={"greeting": "team-a-key"})
    assert first.ok
    snoop = single(
        "import os\n"
        "class Plugin:\n"
        "    def on_command(self, name, payload):\n"
        "        needles = [b'-'.join([b'private', b'note']), b'-'.join([b'team', b'a', b'key'])]\n"
        "        seen = []\n"
        "        for top in ('/workdir', '/tmp', '/dev/shm', '/proc'):\n"
        "            for root, dirs, files in os.walk(top):\n"
        "                if root.startswith('/proc/') and root.count('/') > 3:\n"
        "                    continue\n"
        "                for name in files:\n"
        "                    path = os.path.join(root, name)\n"
        "                    if not os.path.isfile(path):  # a pipe's end blocks a read\n"
        "                        continue\n"
        "                    try:\n"
        "                        with open(path, 'rb') as stream:\n"
        "                            data = stream.read(1 << 16)\n"
        "                    except OSError:\n"
        "                        continue\n"
        "                    if any(needle in data for needle in needles):\n"
        "                        seen.append(path)\n"
        "        return {'seen': seen, 'call_file': os.path.exists('.autocoder/call.json')}\n",
        limits=InvokeLimits(timeout_s=20))
    assert snoop.ok, snoop
    assert snoop.output == {"seen": [], "call_file": False}


def test_a_payload_over_the_limit_is_refused_before_the_sandbox() -> None:
    outcome = call("add", {"note": "n" * 5000}, limits=InvokeLimits(payload_kb=1))
    assert (outcome.ok, outcome.error_kind) == (False, "payload_too_large")
    assert "the limit is 1 KB" in outcome.error


def test_text_in_any_language_round_trips() -> None:
    first = call("add", {"note": "café 東京 ✓ \u2028"})
    assert first.output["notes"] == ["café 東京 ✓ \u2028"]
    again = call("add", {"note": "ß"}, storage=first.storage)
    assert again.storage == {"notes": ["café 東京 ✓ \u2028", "ß"]}


def test_a_malformed_call_is_the_callers_mistake() -> None:
    with pytest.raises(ValueError, match="must be JSON"):
        call_plugin(PluginCall(files={}, entry="a.b:C", command="x", payload={"d": {1, 2}}))
    with pytest.raises(ValueError, match="entry"):
        call_plugin(PluginCall(files={}, entry="no colon", command="x", payload={}))
    with pytest.raises(ValueError, match="either a command or an event"):
        call_plugin(PluginCall(files={}, entry="a.b:C", command="x", payload={},
                               event="activated"))
    with pytest.raises(ValueError, match="unknown event"):
        call_plugin(PluginCall(files={}, entry="a.b:C", command=None, payload={}, event="boom"))


def test_a_broken_sandbox_is_sandbox_unavailable(runtime_missing: Any) -> None:
    outcome = call("add", {"note": "x"})
    assert (outcome.ok, outcome.error_kind) == (False, "sandbox_unavailable")
    assert outcome.error.startswith("The plugin could not be run: the sandbox is not working")
    assert "plugin runtime is broken" in outcome.error


def test_the_limits_are_described_for_admins() -> None:
    rows = dict(INVOKE_LIMITS.described())
    assert rows["Storage"] == "64 KB of JSON per team"
    assert rows["Time"] == "15 seconds per call"
    assert set(rows) >= {"CPU", "Memory", "Input", "Answer", "Log",
                         "Requests to other services"}


def test_the_plugin_is_shipped_compiled_once_per_content(monkeypatch: pytest.MonkeyPatch) -> None:
    from autocoder.calling import invoke

    plugin = "class Plugin:\n    def on_command(self, name, payload):\n        return {!r}\n"
    source, compiled = plugin.format("source"), plugin.format("bytecode")
    path, pyc = invoke._module_pyc("solo/plugin.py", compiled)
    assert path == f"solo/__pycache__/plugin.{sys.implementation.cache_tag}.pyc"
    shipped = invoke._bytecode
    monkeypatch.setattr(invoke, "_bytecode", lambda files: {**shipped(files), path: pyc})
    # the sandbox's interpreter loads the shipped bytecode as it is, without compiling
    assert single(source).output == "bytecode"
    monkeypatch.setattr(invoke, "_bytecode", shipped)
    assert single(source).output == "source"
    before = invoke._module_pyc.cache_info().hits
    single(source)
    assert invoke._module_pyc.cache_info().hits > before


def test_a_plugin_with_a_syntax_error_is_reported_by_the_sandbox() -> None:
    outcome = single("class Plugin:\n    def on_command(self, name, payload)\n")
    assert outcome.error_kind == "plugin_error"
    assert outcome.error.startswith("The plugin could not be loaded: SyntaxError")


@pytest.mark.usefixtures("on_each_backend")
def test_a_thread_the_plugin_leaves_running_does_not_hold_the_call() -> None:
    outcome = single("import threading, time\nclass Plugin:\n"
                     "    def on_command(self, name, payload):\n"
                     "        threading.Thread(target=time.sleep, args=(60,)).start()\n"
                     "        print('done', flush=False)\n"
                     "        return {'answered': True}\n",
                     limits=InvokeLimits(timeout_s=10))
    assert outcome.ok and outcome.output == {"answered": True}
    assert outcome.duration_ms < 5000


@pytest.mark.usefixtures("on_each_backend")
def test_a_plugin_that_floods_its_output_is_stopped_in_plain_words() -> None:
    outcome = single("import sys\nclass Plugin:\n    def on_command(self, name, payload):\n"
                     "        while True:\n            sys.stdout.write('x' * 65536)\n",
                     limits=InvokeLimits(timeout_s=20))
    assert (outcome.ok, outcome.error_kind) == (False, "plugin_error")
    assert outcome.error == ("The plugin stopped without giving an answer (it printed far too"
                             " much).")


def test_bench_invoke_prints_the_overhead_as_json() -> None:
    out = io.StringIO()
    call_command("bench_invoke", "--runs", "5", "--json", stdout=out)
    figures = json.loads(out.getvalue())
    assert figures["mode"] == "overhead" and figures["runs"] == 5
    assert 0 < figures["overhead_min_ms"] <= figures["overhead_p50_ms"] <= figures[
        "overhead_p95_ms"]
    assert figures["goal_p50_ms"] == 50


def test_concurrent_calls_each_get_their_own_storage_and_settings() -> None:
    from concurrent.futures import ThreadPoolExecutor

    def one(team: int) -> CallOutcome:
        return call("add", {"note": f"note of team {team}"}, settings={"greeting": f"t{team}"},
                    storage={"notes": [f"old of team {team}"]})

    with ThreadPoolExecutor(max_workers=3) as pool:
        outcomes = list(pool.map(one, range(6)))
    for team, outcome in enumerate(outcomes):
        assert outcome.ok, outcome
        assert outcome.storage == {"notes": [f"old of team {team}", f"note of team {team}"]}
        assert outcome.log_lines == [f"initialized with greeting t{team}"]


def test_on_the_docker_backend_the_runner_runs_from_source(monkeypatch: pytest.MonkeyPatch) -> None:
    """No Docker engine here: the fake client of tests/sandbox/test_docker_backend.py runs the
    container's real entry program as a local process. The image's Python is the runtime, so
    the runner is started with `site` and shipped as source."""
    from autocoder.sandbox import docker_backend
    from tests.sandbox.test_docker_backend import FakeClient

    client = FakeClient()
    real_run = docker_backend.run
    monkeypatch.setattr(docker_backend, "run",
                        lambda *args, **kwargs: real_run(*args, client=client, **kwargs))
    outcome = call_plugin(PluginCall(files=notes_plugin(), entry="notes.plugin:Plugin",
                                     command="add", payload={"note": "by docker"},
                                     settings={"greeting": "hello"}), backend="docker")
    assert outcome.ok, outcome
    assert outcome.storage == {"notes": ["by docker"]}
    assert outcome.log_lines == ["initialized with greeting hello"]
    config = json.loads(base64.b64decode(client.created[0].kwargs["command"][5]))
    assert config["argv"] == ["python", "-I", "-B", ".autocoder/host.py"]
