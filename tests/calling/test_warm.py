"""Warm sandboxes (autocoder/sandbox/warm.py, zygote.py) on the real bwrap sandbox: a call
keeps nothing for the next (memory, files, environment, processes), teams never share one,
they are recycled after N calls and an idle time, and the limits still hold in them."""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Iterator
from typing import Any

import pytest

from autocoder.calling.invoke import CallOutcome, InvokeLimits, PluginCall, call_plugin
from autocoder.sandbox import warm_pool
from autocoder.sandbox.warm import WarmKey

SMALL = InvokeLimits(timeout_s=30, cpu_s=2, memory_mb=256, output_kb=8)

PLUGIN = '''
import os, time, uuid

def running(pid):
    try:
        with open(f"/proc/{pid}/stat") as stream:
            return stream.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


BORN = uuid.uuid4().hex  # module level: run once, when the zygote imports the plugin
CALLS = []


class Plugin:
    def on_command(self, name, payload):
        if name == "remember":
            CALLS.append(payload["value"])
            os.environ["LEFT_BEHIND"] = payload["value"]
            with open("note.txt", "w") as stream:
                stream.write(payload["value"])
            with open("/tmp/note.txt", "w") as stream:
                stream.write(payload["value"])
            with open("warm_pkg/plugin.py", "a") as stream:  # its own code, changed
                stream.write("\\nCHANGED = True\\n")
            if os.fork() == 0:  # a process left running after the call
                time.sleep(60)
                os._exit(0)
            return {"born": BORN}
        if name == "recall":
            import warm_pkg.plugin as me

            files = {path: os.path.exists(path) for path in ("note.txt", "/tmp/note.txt")}
            alive = [pid for pid in os.listdir("/proc") if pid.isdigit() and running(pid)]
            return {"born": BORN, "calls": CALLS, "env": os.environ.get("LEFT_BEHIND"),
                    "files": files, "changed": hasattr(me, "CHANGED"),
                    "processes": len(alive), "pid": os.getpid()}
        if name == "hang":
            while True:
                pass
        if name == "sleep":
            time.sleep(60)
        if name == "crash":
            os.kill(os.getpid(), 9)
        if name == "kill_zygote":
            os.kill(os.getppid(), 9)
            time.sleep(1)
        if name == "memory":
            hog = []
            while True:
                hog.append(bytearray(16 * 1024 * 1024))
        if name == "shout":
            import sys
            while True:
                sys.stdout.write("x" * 65536)
        if name == "big":
            return {"text": "y" * 20_000}
        return {"born": BORN}
'''


def warm_call(command: str, team: int = 1, version: int = 1, **payload: Any) -> PluginCall:
    files = {"warm_pkg/__init__.py": "", "warm_pkg/plugin.py": PLUGIN,
             "plugin.toml": '[plugin]\nname = "warm"\nentry = "warm_pkg.plugin:Plugin"\n'}
    return PluginCall(files=files, entry="warm_pkg.plugin:Plugin", command=command,
                      payload=payload, warm=WarmKey(team_id=team, version_id=version))


def run(call: PluginCall, limits: InvokeLimits = SMALL) -> CallOutcome:
    return call_plugin(call, limits)


@pytest.fixture(autouse=True)
def fresh_pool(settings: Any) -> Iterator[warm_pool.Pool]:
    settings.SANDBOX_BACKEND = "bwrap"
    settings.SANDBOX_WARM = True
    wanted = warm_pool._wanted
    warm_pool.set_wanted(None)  # no database here: every key stays wanted
    warm_pool.pool().close_all()
    yield warm_pool.pool()
    warm_pool.pool().close_all()
    warm_pool.set_wanted(wanted)


def sandboxes(pool: warm_pool.Pool) -> list[dict[str, Any]]:
    return [s for s in pool.describe() if s["alive"]]


def test_nothing_a_call_does_is_there_for_the_next_call(fresh_pool: warm_pool.Pool) -> None:
    started = fresh_pool.started
    first = run(warm_call("remember", value="secret-of-call-1"))
    assert first.ok, first.detail
    then = run(warm_call("recall"))
    assert then.ok, then.detail
    assert then.output["born"] == first.output["born"]  # the same warm sandbox served both
    assert then.output["calls"] == []  # a module global: back as imported
    assert then.output["env"] is None
    assert then.output["files"] == {"note.txt": False, "/tmp/note.txt": False}
    assert then.output["changed"] is False  # its own file was put back as it was
    # init, the zygote and this call: the process left running by the first call is gone (a
    # zombie its init has not reaped yet is not counted: it runs nothing)
    assert then.output["processes"] == 3
    assert fresh_pool.started == started + 1


def test_two_teams_never_share_a_warm_sandbox(fresh_pool: warm_pool.Pool) -> None:
    team_a = [run(warm_call("recall", team=1)).output["born"] for _ in range(2)]
    team_b = [run(warm_call("recall", team=2)).output["born"] for _ in range(2)]
    assert team_a[0] == team_a[1] and team_b[0] == team_b[1]
    assert team_a[0] != team_b[0]
    pids = {s["team_id"]: s["pid"] for s in sandboxes(fresh_pool)}
    assert set(pids) == {1, 2} and pids[1] != pids[2]


def test_a_warm_sandbox_is_replaced_after_its_number_of_calls(
        settings: Any, fresh_pool: warm_pool.Pool) -> None:
    settings.SANDBOX_WARM_CALLS = 3
    started = fresh_pool.started
    born = [run(warm_call("recall")).output["born"] for _ in range(7)]
    assert born[0] == born[1] == born[2] != born[3]
    assert born[3] == born[4] == born[5] != born[6]
    assert fresh_pool.started == started + 3


def test_an_idle_warm_sandbox_is_stopped(settings: Any, fresh_pool: warm_pool.Pool) -> None:
    first = run(warm_call("recall")).output["born"]
    [pid] = [s["pid"] for s in sandboxes(fresh_pool)]
    settings.SANDBOX_WARM_IDLE_S = 1
    deadline = time.monotonic() + 60
    while (sandboxes(fresh_pool) or os.path.exists(f"/proc/{pid}")) \
            and time.monotonic() < deadline:
        time.sleep(0.2)  # the reaper looks every second, takes it out, then stops it
    assert sandboxes(fresh_pool) == []
    assert not os.path.exists(f"/proc/{pid}")
    assert run(warm_call("recall")).output["born"] != first


def test_retiring_a_version_stops_its_warm_sandbox_at_once(fresh_pool: warm_pool.Pool) -> None:
    run(warm_call("recall", version=7))
    run(warm_call("recall", version=8))
    [pid] = [s["pid"] for s in sandboxes(fresh_pool) if s["version_id"] == 7]
    assert warm_pool.retire(version_id=7) == 1
    assert not os.path.exists(f"/proc/{pid}")
    assert [s["version_id"] for s in sandboxes(fresh_pool)] == [8]


def test_turned_off_no_warm_sandbox_is_kept(settings: Any, fresh_pool: warm_pool.Pool) -> None:
    settings.SANDBOX_WARM = False
    born = {run(warm_call("recall")).output["born"] for _ in range(2)}
    assert len(born) == 2 and fresh_pool.describe() == []
    cold = dataclasses.replace(warm_call("recall"), warm=None)  # what an admin's "off" passes
    settings.SANDBOX_WARM = True
    assert run(cold).ok and fresh_pool.describe() == []


@pytest.mark.parametrize(("command", "kind", "words", "replaced"), [
    ("hang", "cpu_limit", "used all of its 1 second of processor time", False),
    ("sleep", "timeout", "took longer than 3 seconds", True),
    ("shout", "plugin_error", "it printed far too much", True),
    ("big", "output_too_large", "the limit for one answer is 8 KB", False)])
def test_the_limits_hold_and_the_next_call_still_works(command: str, kind: str, words: str,
                                                       replaced: bool,
                                                       fresh_pool: warm_pool.Pool) -> None:
    # Only the sleeping call meets its time limit: on a busy machine, the others' must not
    # come before what they test (a second of processor time can take many seconds)
    limits = dataclasses.replace(SMALL, cpu_s=1, timeout_s=3 if command == "sleep" else 120)
    before = run(warm_call("recall"), limits).output["born"]  # the same limits: the same one
    failed = run(warm_call(command), limits)
    assert not failed.ok and failed.error_kind == kind, (failed.error, failed.detail)
    assert words in failed.error
    after = run(warm_call("recall"), limits)
    assert after.ok, after.detail
    # stopped from outside (time, output), the whole warm sandbox goes; a limit inside (the
    # processor time, the answer's size) ends the call only
    assert (after.output["born"] != before) is replaced


def test_a_plugin_needing_too_much_memory_is_stopped_and_the_next_call_works(
        fresh_pool: warm_pool.Pool) -> None:
    run(warm_call("recall"))
    failed = run(warm_call("memory"), dataclasses.replace(SMALL, timeout_s=120, memory_mb=128))
    assert not failed.ok and failed.error_kind in ("memory_limit", "plugin_error")
    assert "memory" in failed.error.lower() or "MemoryError" in failed.error
    assert run(warm_call("recall")).ok


@pytest.mark.parametrize("command", ["crash", "kill_zygote"])
def test_a_crashing_plugin_fails_in_words_and_the_next_call_works(
        command: str, fresh_pool: warm_pool.Pool) -> None:
    run(warm_call("recall"))
    failed = run(warm_call(command))
    assert not failed.ok and failed.error_kind == "plugin_error"
    assert "killed" in failed.error
    assert run(warm_call("recall")).ok


def test_a_plugin_starting_threads_at_import_runs_in_a_sandbox_per_call(
        fresh_pool: warm_pool.Pool) -> None:
    threaded = PLUGIN.replace("CALLS = []", "CALLS = []\nimport threading\n"
                              "threading.Thread(target=time.sleep, args=(30,),"
                              " daemon=True).start()")
    call = dataclasses.replace(warm_call("recall"), files={
        "warm_pkg/__init__.py": "", "warm_pkg/plugin.py": threaded})
    born = {run(call).output["born"] for _ in range(2)}
    assert len(born) == 2 and sandboxes(fresh_pool) == []
