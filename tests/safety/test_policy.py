"""The safety gate on the constructs it must catch, and on code it must let through."""

from __future__ import annotations

import pytest

from autocoder.safety import Permissions, scan_files

NONE = Permissions()
WORKDIR = Permissions(filesystem="workdir")
NETWORK = Permissions(network=True)


def scan(source: str, permissions: Permissions = NONE, name: str = "pkg/plugin.py"):  # type: ignore[no-untyped-def]
    return scan_files({name: source}, permissions)


def ast_rules(report) -> set[str]:  # type: ignore[no-untyped-def]
    return {f.rule for f in report.findings if f.tool in ("ast", "syntax")}


BLOCKED = {
    "subprocess": ("import subprocess\nsubprocess.run(['ls'])\n", "process"),
    "os.system via alias": ("import os as o\no.system('ls')\n", "process"),
    "os.popen via assignment": ("import os\nm = os\nm.popen('ls')\n", "process"),
    "from os import system": ("from os import system as run\nrun('ls')\n", "process"),
    "os.exec*": ("import os\nos.execv('/bin/sh', ['sh'])\n", "process"),
    "os.spawn*": ("import os\nos.spawnlp(os.P_WAIT, 'ls')\n", "process"),
    "os.fork": ("import os\nos.fork()\n", "process"),
    "from os import *": ("from os import *\nsystem('ls')\n", "process"),
    "asyncio subprocess": ("import asyncio\nasync def f():\n"
                           "    await asyncio.create_subprocess_shell('ls')\n", "process"),
    "loop.subprocess_exec": ("async def f(loop):\n    await loop.subprocess_exec(None, 'ls')\n",
                             "process"),
    "multiprocessing": ("from multiprocessing import Pool\n", "process"),
    "getattr with literal": ("import os\ngetattr(os, 'system')('ls')\n", "process"),
    "getattr with built name": ("import os\ngetattr(os, 'sys' + 'tem')('ls')\n", "process"),
    "socket": ("import socket\n", "network"),
    "urllib.request": ("import urllib.request\nurllib.request.urlopen('http://x')\n",
                       "network"),
    "http.client": ("from http.client import HTTPSConnection\n", "network"),
    "requests": ("import requests\nrequests.get('http://x', timeout=1)\n", "network"),
    "httpx": ("import httpx\n", "network"),
    "asyncio open_connection": ("import asyncio\nasync def f():\n"
                                "    await asyncio.open_connection('x', 80)\n", "network"),
    "eval": ("eval('1 + 1')\n", "dynamic-code"),
    "exec": ("exec('x = 1')\n", "dynamic-code"),
    "compile": ("compile('1', 'f', 'eval')\n", "dynamic-code"),
    "__import__": ("__import__('os')\n", "dynamic-code"),
    "importlib": ("import importlib\nimportlib.import_module('os')\n", "dynamic-code"),
    "exec smuggled as an argument": ("def f(run):\n    run('x')\nf(exec)\n", "dynamic-code"),
    "ctypes": ("import ctypes\n", "native-code"),
    "pickle": ("import pickle\npickle.loads(b'')\n", "deserialization"),
    "marshal": ("import marshal\n", "deserialization"),
    "__globals__": ("def f():\n    pass\nf.__globals__['x'] = 1\n", "dunder-escape"),
    "__subclasses__": ("object.__subclasses__()\n", "dunder-escape"),
    "__builtins__": ("__builtins__['eval']('1')\n", "dunder-escape"),
    "__code__": ("def f():\n    pass\nprint(f.__code__)\n", "dunder-escape"),
    "__mro__ and __bases__": ("().__class__.__bases__[0].__mro__\n", "dunder-escape"),
    "string-built dunder": ("x = object()\ngetattr(x, '__glo' + 'bals__')\n", "dunder-escape"),
    "f-string-built dunder": ("x = object()\ngetattr(x, f'__{\"builtins\"}__')\n",
                              "dunder-escape"),
    "frame walking": ("import sys\nsys._getframe(1).f_globals\n", "introspection"),
    # Every module the file imported, by a computed name.
    "globals()": ("import os\nglobals()['o' + 's'].system('id')\n", "namespace-access"),
    "locals() passed on": ("import os\nns = [locals][0]()\n", "namespace-access"),
    "vars() without an argument": ("def f():\n    import os\n    return vars()\n",
                                   "namespace-access"),
    # Any loaded module by name (posix too): a human look is not enough.
    "sys.modules": ("import sys\nsys.modules['json'].dumps({})\n", "unreviewed-name"),
    "open with filesystem none": ("open('data.txt').read()\n", "filesystem"),
    "pathlib write with filesystem none": ("from pathlib import Path\n"
                                           "Path('x.txt').write_text('hi')\n", "filesystem"),
    "os.remove with filesystem none": ("import os\nos.remove('x')\n", "filesystem"),
    "syntax error": ("def broken(:\n    pass\n", "syntax-error"),
}


@pytest.mark.parametrize("source, rule", BLOCKED.values(), ids=BLOCKED.keys())
def test_denied_constructs_block(source: str, rule: str) -> None:
    report = scan(source)
    assert report.verdict == "block"
    assert rule in ast_rules(report)
    finding = next(f for f in report.findings if f.rule == rule)
    assert finding.file == "pkg/plugin.py" and finding.line >= 1 and finding.message


REVIEWED = {
    "getattr with a computed name": ("def f(row):\n    name = input()\n"
                                     "    return getattr(row, name)()\n",
                                     "dynamic-attribute"),
    "getattr with chr-built name": ("x = object()\n"
                                    "getattr(x, ''.join(map(chr, [95, 95, 99])))\n",
                                    "dynamic-attribute"),
    "vars() of an object": ("class Row:\n    pass\nvars(Row())['x'] = 1\n",
                            "namespace-access"),
}


@pytest.mark.parametrize("source, rule", REVIEWED.values(), ids=REVIEWED.keys())
def test_unresolvable_constructs_go_to_review(source: str, rule: str) -> None:
    report = scan(source)
    assert report.verdict == "review"
    assert rule in ast_rules(report)
    assert next(f for f in report.findings if f.rule == rule).severity == "MEDIUM"


ALLOWED = {
    "plain logic": "import json, re\n\ndef f(payload):\n"
                   "    return json.dumps({'n': len(re.findall('a', payload['s']))})\n",
    "urllib.parse": "from urllib.parse import urlparse\nurlparse('https://x/y').path\n",
    "re.compile is not compile": "import re\nPATTERN = re.compile(r'\\d+')\n",
    "str.replace and dict access": "s = 'a'.replace('a', 'b')\nd = {'__x': 1}\n",
    "class with __init__ and __class__": "class A:\n    def __init__(self):\n"
                                         "        self.name = self.__class__.__name__\n",
    "datetime and zoneinfo": "from datetime import datetime\nfrom zoneinfo import ZoneInfo\n"
                             "datetime(2024, 1, 1, tzinfo=ZoneInfo('UTC'))\n",
}


@pytest.mark.parametrize("source", ALLOWED.values(), ids=ALLOWED.keys())
def test_ordinary_plugin_code_passes(source: str) -> None:
    report = scan(source)
    assert report.verdict == "pass", report.findings


def test_network_modules_are_allowed_when_declared() -> None:
    source = ("import urllib.request\n"
              "urllib.request.urlopen('https://example.org', timeout=5)\n")
    assert scan(source).verdict == "block"
    assert "network" not in ast_rules(scan(source, NETWORK))
    assert "network" not in ast_rules(scan("import socket\n", NETWORK))


@pytest.mark.parametrize("source", ["import httpx\n", "from django.db import models\n",
                                    "import requests.adapters\n", "import numpy as np\n"])
def test_a_library_the_plugin_runtime_lacks_is_refused_in_plain_words(source: str) -> None:
    report = scan(source, NETWORK)
    assert report.verdict == "block"
    [finding] = [f for f in report.findings if f.rule == "unavailable-import"]
    top = source.split()[1].split(".")[0]
    assert f"{top} is not available to plugins" in finding.message
    assert "openpyxl" in finding.message and "docs/plugins.md" in finding.message


def test_the_runtimes_libraries_the_stdlib_and_the_plugins_own_modules_pass() -> None:
    files = {
        "pkg/__init__.py": "",
        "pkg/plugin.py": ("import csv, json, zoneinfo, statistics\nimport openpyxl\n"
                          "import yaml\nfrom dateutil import parser\nimport jinja2, tomli_w\n"
                          "from pkg.helpers import total\nfrom . import helpers\n"),
        "pkg/helpers.py": "def total(rows):\n    return sum(rows)\n",
        "tests/test_plugin.py": "import pytest\nfrom pkg.plugin import parser\n",
    }
    report = scan_files(files, NONE)
    assert not [f for f in report.findings if f.rule == "unavailable-import"], report.findings


def test_pytest_is_for_tests_only() -> None:
    report = scan("import pytest\n")
    assert [f.rule for f in report.findings] == ["unavailable-import"]
    assert "not available to plugins" in report.findings[0].message


def test_process_rules_hold_even_with_network_allowed() -> None:
    assert scan("import subprocess\n", NETWORK).verdict == "block"


def test_workdir_permission_allows_relative_files_only() -> None:
    assert scan("open('data/notes.txt').read()\n", WORKDIR).verdict == "pass"
    assert scan("from pathlib import Path\nPath('out.txt').write_text('x')\n",
                WORKDIR).verdict == "pass"
    escapes = [
        "open('/etc/passwd').read()\n",
        "open('../outside.txt', 'w')\n",
        "open(f'/etc/{name}')\n",
        "from pathlib import Path\n(Path(__file__).parent / '..' / 'x').read_text()\n",
        "from pathlib import Path\nPath.home()\n",
        "import os\nos.path.expanduser('~/.ssh/id_rsa')\n",
        "import tempfile\ntempfile.mkdtemp()\n",
    ]
    for source in escapes:
        report = scan(source, WORKDIR)
        assert report.verdict == "block", source
        assert "filesystem-escape" in ast_rules(report), source


def test_tests_may_use_pytest_tmp_dirs_but_not_host_paths() -> None:
    test_source = ("def test_write(tmp_path):\n    (tmp_path / 'a.txt').write_text('x')\n"
                   "    assert (tmp_path / 'a.txt').read_text() == 'x'\n")
    assert scan(test_source, name="tests/test_files.py").verdict == "pass"
    assert scan(test_source, name="pkg/plugin.py").verdict == "block"
    host = "def test_read():\n    assert open('/etc/passwd').read()\n"
    assert scan(host, name="tests/test_host.py").verdict == "block"


def test_test_files_are_scanned_for_everything_else() -> None:
    report = scan_files({"pkg/plugin.py": "X = 1\n",
                         "tests/test_plugin.py": "import subprocess\n\ndef test_x():\n"
                                                 "    subprocess.run(['true'])\n"})
    assert report.verdict == "block"
    assert {f.file for f in report.findings if f.rule == "process"} == {"tests/test_plugin.py"}


def test_only_python_files_are_scanned() -> None:
    assert scan_files({"README.md": "import subprocess", "data.json": "{}"}).verdict == "pass"


def test_nosec_comments_hide_nothing() -> None:
    source = ("import subprocess  # nosec\n"
              "subprocess.call('ls ' + name, shell=True)  # nosec B602\n")
    report = scan(source)
    assert report.verdict == "block"
    bandit_ids = {f.rule for f in report.findings if f.tool == "bandit"}
    assert "B602" in bandit_ids  # bandit itself would have skipped this line


def test_bandit_findings_carry_id_severity_confidence_file_and_line() -> None:
    source = "import hashlib\n\n\ndef digest(data):\n    return hashlib.md5(data).hexdigest()\n"
    report = scan(source)
    finding = next(f for f in report.findings if f.tool == "bandit")
    assert (finding.rule, finding.severity, finding.confidence) == ("B324", "HIGH", "HIGH")
    assert (finding.file, finding.line) == ("pkg/plugin.py", 5)
    assert report.verdict == "block"
    assert set(finding.as_dict()) >= {"tool", "rule", "severity", "file", "line", "message"}


def test_bandit_medium_alone_means_review() -> None:
    report = scan("import urllib.request\n\n\ndef fetch(url):\n"
                  "    return urllib.request.urlopen(url, timeout=5)\n", NETWORK)
    assert report.verdict == "review"
    assert [f.rule for f in report.findings] == ["B310"]


def test_syntax_errors_and_undecodable_files_are_findings() -> None:
    report = scan_files({"a.py": "x = (\n", "b.py": b"\xff\xfe".decode("latin-1") + "\x00"})
    assert report.verdict == "block"
    assert {f.file for f in report.findings if f.tool == "syntax"} == {"a.py", "b.py"}


def test_pathological_nesting_is_reported_never_raised() -> None:
    # Python's own parser gives up on this one: unparsable code is blocked.
    too_deep = scan("x = " + " + ".join(["'a'"] * 20_000) + "\n")
    assert too_deep.verdict == "block" and ast_rules(too_deep) == {"unparsable"}
    # The policy walks this one iteratively; bandit's recursive visitor cannot, so a human
    # is asked to look instead of the file passing unscanned.
    deep = scan("x = " + " + ".join(["'a'"] * 2_000) + "\n")
    assert deep.verdict == "review"
    assert [(f.tool, f.rule) for f in deep.findings] == [("bandit", "scan-failed")]
    nested = scan("x = " + "(" * 300 + "1" + ")" * 300 + "\n")
    assert nested.verdict == "block" and ast_rules(nested) <= {"syntax-error", "unparsable"}


def test_as_dict_matches_the_documented_shape() -> None:
    data = scan("import socket\n").as_dict()
    assert data["verdict"] == "block"
    assert data["findings"][0] == {"tool": "ast", "rule": "network", "severity": "HIGH",
                                   "file": "pkg/plugin.py", "line": 1, "confidence": "",
                                   "message": data["findings"][0]["message"]}


def test_permissions_reject_unknown_values() -> None:
    with pytest.raises(ValueError):
        Permissions(filesystem="everything")
    with pytest.raises(ValueError):
        Permissions(network="yes")  # type: ignore[arg-type]
