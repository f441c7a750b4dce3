"""The reviewed standard library: side doors block, ordinary plugin code passes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autocoder.engine.replies import merge_files, parse_reply
from autocoder.engine.scaffold import protected_paths, scaffold_files
from autocoder.engine.spec import spec_from_json
from autocoder.safety import Permissions, SafetyReport, scan_files

ROOT = Path(__file__).resolve().parents[2]
NONE = Permissions()
WORKDIR = Permissions(filesystem="workdir")
NETWORK = Permissions(network=True)


def scan(source: str, permissions: Permissions = NONE,
         name: str = "pkg/plugin.py") -> SafetyReport:
    return scan_files({name: source}, permissions)


def blocking(report: SafetyReport) -> list[str]:
    return [f"{f.rule}: {f.message}" for f in report.findings if f.severity == "HIGH"]


# Each of these got verdict "pass" before the standard library was reviewed by name.
SIDE_DOORS = {
    "pydoc.locate": ("import pydoc\npydoc.locate('os.system')('id')\n", "`pydoc`"),
    "posix.system": ("import posix\nposix.system('id')\n", "`posix`"),
    "posix.fork": ("from posix import fork\nfork()\n", "`posix`"),
    "_posixsubprocess": ("import _posixsubprocess\n", "`_posixsubprocess`"),
    "_socket.socket": ("import _socket\n_socket.socket()\n", "`_socket`"),
    "_io.open": ("import _io\n_io.open('/etc/passwd').read()\n", "`_io`"),
    "operator.methodcaller": ("import operator\nimport os\n"
                              "operator.methodcaller('system', 'id')\n", "'system'"),
    "os.setsid": ("import os\nos.setsid()\n", "`os.setsid`"),
}


@pytest.mark.parametrize("source, named", SIDE_DOORS.values(), ids=SIDE_DOORS.keys())
def test_side_doors_block_and_say_what_is_not_reviewed(source: str, named: str) -> None:
    report = scan(source)
    assert report.verdict == "block", report.findings
    messages = blocking(report)
    assert any(named in message for message in messages), messages


def test_an_unreviewed_module_is_named_with_the_reason() -> None:
    [finding] = [f for f in scan("import pydoc\n").findings if f.tool == "ast"]
    assert (finding.rule, finding.severity, finding.line) == ("unreviewed-module", "HIGH", 1)
    assert finding.message == ("the module `pydoc` is not on the gate's reviewed list of "
                               "standard-library modules (see docs/safety.md)")
    [private] = [f for f in scan("import _io\n").findings if f.tool == "ast"]
    assert "private modules are never reviewed" in private.message


MORE_DOORS = {
    "a module reached through a reviewed one": "import pathlib\npathlib.os.system('id')\n",
    "os through os.path": "import os.path\nos.path.os.system('id')\n",
    "sys.modules lookup": "import sys\nsys.modules['posix'].system('id')\n",
    "a broad module passed as a value": "import os\n\ndef run(m):\n    m.system('id')\n\n"
                                        "run(os)\n",
    "a module in a list": "import os\n[os][0].system('id')\n",
    "attrgetter to a module": "import operator, pathlib\noperator.attrgetter('os')(pathlib)\n",
    "attrgetter with a dotted dunder": "import operator\n"
                                       "operator.attrgetter('f.__globals__')\n",
    "methodcaller with exec*": "import operator\noperator.methodcaller('execv', 'sh', [])\n",
    "getattr of a denied name on any object": "def f(m):\n    return getattr(m, 'popen')\n",
    "private name of a reviewed module": "import json\njson._default_decoder\n",
    "star import from a broad module": "from sys import *\n",
    "typing.get_type_hints": "import typing\ntyping.get_type_hints(object)\n",
    "string.Formatter.get_field": "from string import Formatter\n"
                                  "Formatter().get_field('0.real', [1], {})\n",
    "a string annotation with a call": "def f(x: \"__import__('os').system('id')\"):\n"
                                       "    pass\n",
    "a call in a string inside a string annotation": "def f(x: \"list['__import__(0)']\"):\n"
                                                      "    pass\n",
    "assigning __annotations__": "def f():\n    pass\nf.__annotations__ = {}\n",
    "logging.config": "import logging.config\nlogging.config.dictConfig({})\n",
    "breakpoint()": "breakpoint()\n",
    "help()": "help('modules')\n",
    "importlib by another name": "from importlib import import_module as load\n",
    "ctypes's private twin": "import _ctypes\n",
    "a network module with network = false": "import ssl\n",
    "one name for two modules": "import os as json\n\ndef f():\n    import json\n\n"
                                "json.system('id')\n",
    "an import hidden behind a dead branch": "import os\nif False:\n    import json as os\n"
                                             "os.system('id')\n",
    "an alias rebound to another module": "import json, os\nx = json\nx = os\n"
                                          "x.system('id')\n",
}


@pytest.mark.parametrize("source", MORE_DOORS.values(), ids=MORE_DOORS.keys())
def test_other_routes_around_the_list_block(source: str) -> None:
    assert scan(source).verdict == "block", scan(source).findings


COMPUTED = {
    "getattr": "def f(row, name):\n    return getattr(row, name)\n",
    "attrgetter": "import operator\n\ndef f(name):\n    return operator.attrgetter(name)\n",
    "methodcaller": "from operator import methodcaller\n\ndef f(name):\n"
                    "    return methodcaller(name)\n",
    "getattr passed on": "def f(x, name):\n    return [getattr][0](x, name)\n",
    "attrgetter passed on": "import functools, operator\n\ndef f(names):\n"
                            "    return list(map(operator.attrgetter, names))\n",
}


@pytest.mark.parametrize("source", COMPUTED.values(), ids=COMPUTED.keys())
def test_lookups_by_a_computed_name_go_to_a_human(source: str) -> None:
    report = scan(source)
    assert report.verdict == "review", report.findings
    assert [f.rule for f in report.findings] == ["dynamic-attribute"]


ORDINARY = {
    "csv and io.StringIO": "import csv\nimport io\n\ndef rows(text):\n"
                           "    return list(csv.DictReader(io.StringIO(text)))\n",
    "json and re": "import json, re\nre.sub(r'\\s+', ' ', json.dumps({'a': 1}))\n",
    "dates and zones": "from datetime import date, datetime, timedelta, timezone\n"
                       "from zoneinfo import ZoneInfo\nimport calendar\n"
                       "datetime.now(timezone.utc).astimezone(ZoneInfo('Europe/Paris'))\n"
                       "calendar.monthrange(2024, 2)\ndate.today() + timedelta(days=1)\n",
    "numbers": "import math, statistics\nfrom decimal import Decimal, ROUND_HALF_UP\n"
               "from fractions import Fraction\n"
               "statistics.mean([1, 2]) + math.floor(2.5)\n"
               "Decimal('1.005').quantize(Decimal('0.01'), rounding=ROUND_HALF_UP)\n"
               "Fraction(1, 3)\n",
    "collections and itertools": "from collections import Counter, defaultdict, OrderedDict\n"
                                 "from collections.abc import Mapping\n"
                                 "import itertools, functools, bisect, heapq, copy\n"
                                 "list(itertools.chain([1], [2]))\nfunctools.reduce(max, [1])\n"
                                 "bisect.insort([], 1)\nheapq.nsmallest(1, [2])\n"
                                 "copy.deepcopy(Counter('ab'))\n",
    "dataclasses, typing, enum": "from __future__ import annotations\n"
                                 "from dataclasses import dataclass, field, asdict\n"
                                 "from typing import Any, Optional\nimport enum\n\n"
                                 "class Colour(enum.Enum):\n    RED = 1\n\n"
                                 "@dataclass\nclass Row:\n    name: str\n"
                                 "    tags: list[str] = field(default_factory=list)\n"
                                 "    note: Optional['Row'] = None\n",
    "text": "import string, textwrap, unicodedata, html, pprint\n"
            "from urllib.parse import quote, urlencode\n"
            "textwrap.fill(string.ascii_letters, 10)\nunicodedata.normalize('NFC', 'e')\n"
            "html.escape('<a>')\nquote('a b')\npprint.pformat({})\n",
    "ids and hashes": "import uuid, hashlib, base64\nuuid.uuid4().hex\n"
                      "hashlib.sha256(b'x').hexdigest()\nbase64.b64encode(b'x')\n",
    "md5 for a checksum": "import hashlib\n"
                          "hashlib.md5(b'x', usedforsecurity=False).hexdigest()\n",
    "os.path": "import os\nimport os.path\nos.path.join('a', 'b')\nos.path.splitext('a.txt')\n"
               "os.sep\n",
    "io.BytesIO": "from io import BytesIO\nBytesIO(b'x').read()\n",
    "operator helpers": "from operator import attrgetter, itemgetter, methodcaller\n"
                        "sorted([], key=itemgetter('date'))\n"
                        "sorted([], key=attrgetter('name', 'date'))\n"
                        "list(map(methodcaller('strip'), [' a ']))\n",
    "getattr with an ordinary name": "def f(row):\n    return getattr(row, 'priority', 0)\n",
    "getattr of the plugin's own private cache": "def f(self):\n"
                                                 "    return getattr(self, '_cache', None)\n",
    "an alias of getattr": "get = getattr\n\ndef f(row):\n    return get(row, 'name')\n",
    "sys basics": "import sys\nprint('x', file=sys.stderr)\nsys.version_info >= (3, 11)\n",
    "logging": "import logging\nlog = logging.getLogger(__name__)\nlog.info('x')\n",
    "inspect.signature": "import inspect\ninspect.signature(print)\n",
    "SimpleNamespace": "from types import SimpleNamespace\nSimpleNamespace(a=1).a\n",
    "the runtime's libraries": "import openpyxl, yaml, jinja2, tomli_w\n"
                               "from dateutil import parser\nyaml.safe_load('a: 1')\n",
    "tomllib": "import tomllib\ntomllib.loads('a = 1')\n",
    "a plugin's own help function": "def help():\n    return 'usage'\n\nhelp()\n",
    "a plain type as a string annotation": "def f(x: 'list[int] | None') -> 'dict':\n"
                                           "    return {}\n",
}


@pytest.mark.parametrize("source", ORDINARY.values(), ids=ORDINARY.keys())
def test_ordinary_plugin_code_passes(source: str) -> None:
    report = scan(source)
    assert report.verdict == "pass", report.findings


def test_file_helpers_are_left_to_the_filesystem_rule() -> None:
    source = ("import os, shutil, glob\nfrom pathlib import Path\n"
              "os.makedirs('out', exist_ok=True)\nPath('out/a.txt').write_text('x')\n"
              "shutil.copy('out/a.txt', 'out/b.txt')\nglob.glob('out/*.txt')\n")
    assert scan(source, WORKDIR).verdict == "pass", scan(source, WORKDIR).findings
    assert "filesystem" in {f.rule for f in scan(source).findings}


def test_network_modules_are_reviewed_only_when_declared() -> None:
    source = "import socket, ssl\nimport urllib.request\n"
    assert scan(source).verdict == "block"
    assert scan(source, NETWORK).verdict == "pass", scan(source, NETWORK).findings
    # The network permission is no pass for modules that do more than talk to the network.
    assert scan("import webbrowser\n", NETWORK).verdict == "block"
    assert scan("import _socket\n", NETWORK).verdict == "block"


TEST_CODE = {
    "pytest, unittest.mock and tempfile": "import tempfile\nfrom unittest import mock\n"
                                          "import pytest\n\ndef test_x(tmp_path):\n"
                                          "    with mock.patch.object(tmp_path, 'exists'):\n"
                                          "        pass\n"
                                          "    with tempfile.TemporaryDirectory() as d:\n"
                                          "        assert d\n",
    "the scaffolded conftest": "import sys\nfrom pathlib import Path\n\n"
                               "_ROOT = str(Path(__file__).resolve().parent.parent)\n"
                               "if _ROOT not in sys.path:\n    sys.path.insert(0, _ROOT)\n",
}


@pytest.mark.parametrize("source", TEST_CODE.values(), ids=TEST_CODE.keys())
def test_a_plugins_tests_may_use_the_test_tools(source: str) -> None:
    report = scan(source, name="tests/test_plugin.py")
    assert report.verdict == "pass", report.findings


def test_test_tools_are_for_tests_only() -> None:
    assert scan("from unittest import mock\n").verdict == "block"
    assert scan("import sys\nsys.path.insert(0, 'x')\n").verdict == "block"


def test_a_plugin_package_with_a_private_name_is_its_own() -> None:
    files = {"_tools/__init__.py": "", "_tools/plugin.py": "X = 1\n",
             "tests/test_plugin.py": "from _tools.plugin import X\n\ndef test_x():\n"
                                     "    assert X == 1\n"}
    assert scan_files(files).verdict == "pass", scan_files(files).findings


def _demo_files(spec_path: Path, script_path: Path) -> list[tuple[str, dict[str, str]]]:
    """The plugin as each implementer and tester reply leaves it, over the scaffold."""
    spec = spec_from_json(spec_path.read_text())
    files = scaffold_files(spec)
    script = json.loads(script_path.read_text())
    states = []
    for role in ("implementer", "tester"):
        for index, reply in enumerate(script.get(role, [])):
            files, _ = merge_files(files, parse_reply(reply).files,
                                    protected=protected_paths(spec))
            states.append((f"{script_path.stem} {role} #{index + 1}", dict(files)))
    return states


SCRIPTS = sorted((ROOT / "tests/engine/scripts").glob("*.json"))
# Replies written to be blocked by the gate (they shell out); every other reply must pass.
MEANT_TO_BLOCK = {"blocked_then_ok implementer #1"}


def test_the_bundled_demo_plugin_passes_the_gate() -> None:
    examples = ROOT / "docs/examples"
    states = _demo_files(examples / "weekly-scheduler.spec.json",
                         examples / "weekly-scheduler.script.json")
    assert states
    for label, files in states:
        report = scan_files(files)
        assert report.verdict == "pass", (label, report.findings)


@pytest.mark.parametrize("script", [p for p in SCRIPTS if p.name != "greeter.spec.json"],
                         ids=lambda p: p.stem)
def test_the_engine_scenarios_replies_pass_the_gate(script: Path) -> None:
    spec = ROOT / "tests/engine/scripts/greeter.spec.json"
    for label, files in _demo_files(spec, script):
        report = scan_files(files)
        expected = "block" if label in MEANT_TO_BLOCK else "pass"
        assert report.verdict == expected, (label, report.findings)


def test_a_module_beside_its_namesake_member_passes_but_two_modules_under_one_name_block() -> None:
    """`import datetime` with `from datetime import datetime` is everyday code (and what small
    models write); one name for two modules stays blocked."""
    both = ("import datetime\nfrom datetime import datetime\n\n\n"
            "def stamp():\n    return datetime.now().isoformat()\n")
    assert scan_files({"pkg/plugin.py": both}).verdict == "pass"
    two = "import os as json\nimport json\n\n\ndef f():\n    return json.system('ls')\n"
    assert scan_files({"pkg/plugin.py": two}).verdict == "block"
