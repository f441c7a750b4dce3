"""A module may be used only as `module.name`: a generated family of ways to reach os, sys,
subprocess, socket or builtins through a reviewed module, every one of which must block.

Each spelling below passed the gate (verdict "pass") or only went to review before modules
kept as values were refused (issue: "a gate bypass that runs code on a pip user's machine").
"""

from __future__ import annotations

import importlib
import itertools
import types

import pytest

from autocoder.safety import SafetyReport, scan_files
from autocoder.safety.reviewed import REVIEWED_MODULES, REVIEWED_NAMES

# What each dangerous module is used for once reached (the payload after the module value).
PAYLOADS = {
    "os": '.system("echo ran > f.txt")',
    "sys": '.modules["os"].system("echo ran")',
    "subprocess": '.run(["echo", "ran"])',
    "socket": ".socket()",
    "builtins": '.eval("1 + 1")',
    "posix": '.system("echo ran")',
}


def _routes() -> list[tuple[str, str, str]]:
    """(reviewed module, its attribute, the dangerous module that attribute is), found by
    importing the reviewed modules as the gate's own process has them."""
    found = []
    for module_name in sorted((REVIEWED_MODULES | set(REVIEWED_NAMES)) - {"builtins"}):
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        for attribute in sorted(vars(module)):
            value = getattr(module, attribute)
            if isinstance(value, types.ModuleType) and value.__name__ in PAYLOADS \
                    and not attribute.startswith("__"):
                found.append((module_name, attribute, value.__name__))
    return found


ROUTES = _routes()

# How the module value is reached: {m} is the reviewed module, {a} its attribute's name.
REACHES = {
    "getattr": 'getattr({m}, "{a}")',
    "getattr with a default": 'getattr({m}, "{a}", None)',
    "getattr with a built name": 'getattr({m}, "".join(["{a}"]))',
    "getattr with a computed name": "getattr({m}, NAME)",
    "an attribute": "{m}.{a}",
    "vars()": 'vars({m})["{a}"]',
    "__dict__": '{m}.__dict__["{a}"]',
    "__dict__.get": '{m}.__dict__.get("{a}")',
}
# Where the module value is kept before it is used: {r} is the reach expression.
KEEPS = {
    "used at once": ("", "({r})"),
    "a dict": ('_box = {{"m": {r}}}\n', '_box["m"]'),
    "a list": ("", "[{r}][0]"),
    "a tuple": ("", "({r},)[0]"),
    "a set": ("", "{{{r}}}.pop()"),
    "a lambda": ("", "(lambda: {r})()"),
    "a conditional": ("", "({r} if True else None)"),
    "returned": ("def _get():\n    return {r}\n\n\n", "_get()"),
    "passed": ("def _same(value):\n    return value\n\n\n", "_same({r})"),
    "a default argument": ("def _get(value={r}):\n    return value\n\n\n", "_get()"),
    "unpacked": ("(_m,) = ({r},)\n", "_m"),
    "a class attribute": ("class _Holder:\n    m = {r}\n\n\n", "_Holder.m"),
    "an alias": ("_m = {r}\n", "_m"),
    "a walrus": ("", "(_m := {r})"),
    "next(iter())": ("", "next(iter([{r}]))"),
    "dict()": ("", 'dict(m={r})["m"]'),
    "compared": ("_same = {r} == {r}\n", "{r}"),
}


def _cases() -> list[tuple[str, str]]:
    """Every reach in every keep, each with the next route in turn (so every route and every
    dangerous module is met without scanning the whole product)."""
    cases = []
    routes = itertools.cycle(ROUTES)
    for (reach_name, reach), (keep_name, (setup, use)) in itertools.product(REACHES.items(),
                                                                          KEEPS.items()):
        module, attribute, target = next(routes)
        expression = reach.format(m=module, a=attribute)
        source = (f"import {module}\n\nNAME = '{attribute}'\n"
                  + setup.format(r=expression)
                  + f"RAN = {use.format(r=expression)}{PAYLOADS[target]}\n")
        cases.append((f"{module}.{attribute} via {reach_name}, {keep_name}", source))
    for module, attribute, target in ROUTES:  # every route at least once, plainly
        source = (f"import {module}\n_box = {{\"m\": getattr({module}, \"{attribute}\")}}\n"
                  f"RAN = _box[\"m\"]{PAYLOADS[target]}\n")
        cases.append((f"{module}.{attribute} in a dict", source))
    return cases


CASES = _cases()

# Across the plugin's own files: a module imported in one file, used from another.
HELPERS = "import os\nimport sys\n"
ACROSS_FILES = {
    "from .helpers import os": "from .helpers import os as _o\n_o.system('echo ran')\n",
    "from pkg.helpers import os": "from pkg.helpers import os\nos.system('echo ran')\n",
    "from . import helpers": "from . import helpers\nhelpers.os.system('echo ran')\n",
    "import pkg.helpers": "import pkg.helpers\npkg.helpers.sys.modules['os']\n",
    "the helpers module as a value": "from . import helpers\n_h = [helpers][0]\n"
                                     "_h.os.system('echo ran')\n",
    "a star import": "from .helpers import *\nos.system('echo ran')\n",
}
# The runtime's libraries: their routes to modules and to code the gate cannot see.
LIBRARIES = {
    "a module through a library": "import dateutil.tz\ndateutil.tz.os.system('echo ran')\n",
    "a library module as a value": "import dateutil\n[dateutil][0].tz.os.system('echo ran')\n",
    "a Jinja2 template": "import jinja2\njinja2.Template(\"{{ cycler.__init__.__globals__"
                        ".os.popen('echo ran').read() }}\").render()\n",
    "a Jinja2 environment": "from jinja2 import Environment\nEnvironment().from_string('x')\n",
    "jinja2.utils.import_string": "from jinja2.utils import import_string\n"
                                  "import_string('os:system')('echo ran')\n",
    "a Jinja2 sandbox switched off": "from jinja2.sandbox import SandboxedEnvironment\n"
                                     "_env = SandboxedEnvironment()\n"
                                     "_env.is_safe_attribute = lambda *a: True\n",
    "a Jinja2 sandbox subclassed": "from jinja2.sandbox import SandboxedEnvironment\n\n\n"
                                   "class _Open(SandboxedEnvironment):\n"
                                   "    def is_safe_attribute(self, *a):\n"
                                   "        return True\n",
    "yaml.unsafe_load": "import yaml\nyaml.unsafe_load('!!python/object/apply:os.system "
                        "[echo ran]')\n",
    "yaml.load with its full loader": "import yaml\nyaml.load('a: 1', Loader=yaml.Loader)\n",
    "a private attribute that holds a module": "import warnings\n"
                                                "warnings.catch_warnings()._module.sys\n",
    "Jinja2 extensions by name": "from jinja2.sandbox import SandboxedEnvironment\n"
                                 "SandboxedEnvironment(extensions=['subprocess.getoutput'])\n",
    "a Jinja2 extension added later": "from jinja2.sandbox import SandboxedEnvironment\n"
                                      "SandboxedEnvironment().add_extension('os.system')\n",
    "a star import from a library": "from dateutil.tz import *\nos.system('echo ran')\n",
    "a star import that binds modules": "from uuid import *\nos.system('echo ran')\n",
}


def blocks(report: SafetyReport) -> bool:
    return report.verdict == "block"


def test_the_family_is_large_and_meets_every_dangerous_module() -> None:
    assert len(ROUTES) >= 10, ROUTES
    assert {target for _, _, target in ROUTES} >= {"os", "sys"}
    assert len(CASES) >= len(REACHES) * len(KEEPS)


@pytest.mark.parametrize("source", [source for _, source in CASES],
                         ids=[name for name, _ in CASES])
def test_a_module_reached_through_a_reviewed_module_blocks(source: str) -> None:
    report = scan_files({"pkg/__init__.py": "", "pkg/plugin.py": source})
    assert blocks(report), (source, report.findings)


@pytest.mark.parametrize("source", ACROSS_FILES.values(), ids=ACROSS_FILES.keys())
def test_a_module_taken_from_another_file_of_the_plugin_blocks(source: str) -> None:
    files = {"pkg/__init__.py": "", "pkg/helpers.py": HELPERS, "pkg/plugin.py": source}
    report = scan_files(files)
    assert blocks(report), (source, report.findings)


@pytest.mark.parametrize("source", LIBRARIES.values(), ids=LIBRARIES.keys())
def test_routes_through_the_runtimes_libraries_block(source: str) -> None:
    report = scan_files({"pkg/__init__.py": "", "pkg/plugin.py": source})
    assert blocks(report), (source, report.findings)


def test_the_message_says_what_to_write_instead() -> None:
    report = scan_files({"pkg/plugin.py": 'import shutil\n_box = {"m": getattr(shutil, "os")}\n'
                                          '_box["m"].system("echo ran")\n'})
    messages = " ".join(f.message for f in report.findings)
    assert "`import os`" in messages and "module" in messages, messages


FINE = {
    "a helper module's own functions": (
        {"pkg/helpers.py": "import os\n\n\ndef here():\n    return os.getcwd()\n",
         "pkg/plugin.py": "from .helpers import here\nfrom . import helpers\n"
                          "helpers.here()\nhere()\n"}),
    "a module's name and docs": {"pkg/plugin.py": "import json\njson.__name__\njson.__doc__\n"},
    "os.path from os": {"pkg/plugin.py": "import os\nos.path.join('a', 'b')\n"},
    "an alias of a module": {"pkg/plugin.py": "import datetime as dt\n_d = dt\n"
                                              "_d.date(2024, 1, 1)\n"},
    "getattr of a reviewed name": {"pkg/plugin.py": "import math\ngetattr(math, 'pi')\n"},
    "the Jinja2 sandbox": {"pkg/plugin.py": "from jinja2.sandbox import SandboxedEnvironment\n"
                                            "SandboxedEnvironment(autoescape=True)"
                                            ".from_string('{{ a }}').render(a=1)\n"},
    "yaml.safe_load": {"pkg/plugin.py": "import yaml\nyaml.safe_load('a: 1')\n"
                                        "yaml.safe_dump({'a': 1})\n"},
    "namedtuple's API": {"pkg/plugin.py": "from collections import namedtuple\n"
                                          "Row = namedtuple('Row', 'a b')\n"
                                          "Row(1, 2)._replace(a=3)._asdict()\n"},
    "the plugin's own private state": {"pkg/plugin.py": "class Plugin:\n"
                                                        "    def __init__(self):\n"
                                                        "        self._cache = {}\n"},
}


@pytest.mark.parametrize("files", FINE.values(), ids=FINE.keys())
def test_ordinary_uses_of_modules_still_pass(files: dict[str, str]) -> None:
    report = scan_files({"pkg/__init__.py": "", **files})
    assert report.verdict == "pass", report.findings


def test_a_star_import_of_an_unreviewed_module_is_refused_without_importing_it() -> None:
    """Finding out what `*` binds imports the module in the gate's process: only reviewed
    modules are ever imported there (`antigravity` would open a web browser)."""
    import sys

    report = scan_files({"pkg/plugin.py": "from antigravity import *\n"})
    assert blocks(report) and "antigravity" not in sys.modules

