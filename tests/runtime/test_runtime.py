"""The plugin runtime: built from its lock, what plugins can import in the sandbox, and what
they cannot (the portal's own packages)."""

from __future__ import annotations

import json
import re
import subprocess

from autocoder.runtime import LIBRARIES, REQUIREMENTS, TEST_LIBRARIES, runtime_dir, runtime_python
from autocoder.sandbox import Limits, run
from autocoder.sandbox.probe import runtime_fault

LOCK = dict(re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)$", REQUIREMENTS.read_text(), re.M))


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_every_library_promised_to_plugins_is_pinned_in_the_lock() -> None:
    lock = {_canonical(name): version for name, version in LOCK.items()}
    for lib in (*LIBRARIES, *TEST_LIBRARIES):
        assert lock.get(_canonical(lib.distribution)) == lib.version, lib


def test_the_built_runtime_holds_exactly_the_lock() -> None:
    script = ("import importlib.metadata as m, json; print(json.dumps("
              "{d.metadata['Name']: d.version for d in m.distributions()}))")
    done = subprocess.run([str(runtime_python()), "-I", "-c", script], capture_output=True,
                          text=True, check=True)
    installed = {_canonical(k): v for k, v in json.loads(done.stdout).items()}
    assert installed == {_canonical(k): v for k, v in LOCK.items()}


def test_plugins_see_the_runtime_libraries_and_none_of_the_portal() -> None:
    code = ("import importlib.util, json, sys\n"
            "names = ['openpyxl', 'dateutil', 'yaml', 'tomli_w', 'jinja2', 'tzdata', 'pytest',\n"
            "         'django', 'psycopg', 'torch', 'openai', 'anthropic', 'dramatiq',\n"
            "         'autocoder', 'channels']\n"
            "print(json.dumps({n: importlib.util.find_spec(n) is not None for n in names}))\n"
            "print(sys.prefix)\n")
    result = run({"probe.py": code}, ["python", "probe.py"], Limits(timeout_s=30))
    assert result.exit_code == 0, result.stderr
    found, prefix = result.stdout.strip().splitlines()
    seen = json.loads(found)
    assert [n for n, ok in seen.items() if ok] == ["openpyxl", "dateutil", "yaml", "tomli_w",
                                                    "jinja2", "tzdata", "pytest"]
    assert prefix == str(runtime_dir())


def test_the_real_path_check_passes_on_the_built_runtime() -> None:
    assert runtime_fault(fresh=True) is None
