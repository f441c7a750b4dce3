"""No block kind hides an import: a generated family of every block Python has, at every
nesting (module, function, async function, method, class, class in a function, nested class),
each binding a dangerous module and using it from outside the block. Every one must block.

Before class bodies were judged as module code, `class _K: import os as o` and then
`_K.o.system(...)` passed the gate with no finding, and ran a shell command on the machine of
whoever pip-installed the plugin (issue: "a gate bypass through class bodies").
"""

from __future__ import annotations

import ast
import itertools
import textwrap

import pytest

from autocoder.safety import scan_files

# Every compound statement that holds a block of statements, as a template around {body}.
# `async` blocks are only valid inside an async function (see NESTINGS).
BLOCKS = {
    "plain": "{body}",
    "if": "if True:\n{body}",
    "elif": "if False:\n    pass\nelif True:\n{body}",
    "else": "if False:\n    pass\nelse:\n{body}",
    "for": "for _i in range(1):\n{body}",
    "for-else": "for _i in range(0):\n    pass\nelse:\n{body}",
    "while": "while True:\n{body}\n    break",
    "while-else": "while False:\n    pass\nelse:\n{body}",
    "with": "with contextlib.suppress(ValueError):\n{body}",
    "try": "try:\n{body}\nexcept ValueError:\n    pass",
    "except": "try:\n    raise ValueError\nexcept ValueError:\n{body}",
    "try-else": "try:\n    pass\nexcept ValueError:\n    pass\nelse:\n{body}",
    "finally": "try:\n    pass\nfinally:\n{body}",
    "except*": "try:\n    raise ValueError\nexcept* ValueError:\n{body}",
    "match": "match 1:\n    case 1:\n    {body}",
    "match-capture": "match 1:\n    case _x:\n    {body}",
    "nested if in try": "try:\n    if True:\n    {body}\nexcept ValueError:\n    pass",
}
ASYNC_BLOCKS = {
    "async for": "async for _i in _agen():\n{body}",
    "async with": "async with contextlib.AsyncExitStack():\n{body}",
}

# How the block binds `o` to a dangerous module, and what reaching `o` then does.
BINDINGS = {
    "import os as o": ("import os as o", '.system("echo ran > f.txt")'),
    "import sys as o": ("import sys as o", '.modules["os"].system("echo ran")'),
    "from os import path as o": ("from os import path as o", '.os.system("echo ran")'),
    "o = os": ("o = os", '.system("echo ran")'),
    "(o := os)": ("(o := os)", '.system("echo ran")'),
    "o: object = os": ("o: object = os", '.system("echo ran")'),
}

# Where the block sits, and how the bound `o` is reached from outside it. {block} is the
# block, already indented as its place needs.
NESTINGS = {
    "module": ("{block}\n", "o"),
    "function": ("def _f():\n{block}\n    return o\n", "_f()"),
    "async function": ("async def _f():\n{block}\n    return o\n", "_result(_f())"),
    "method": ("class _K:\n    def m(self):\n{block}\n        return o\n", "_K().m()"),
    "class": ("class _K:\n{block}\n", "_K.o"),
    "instance": ("class _K:\n{block}\n", "_K().o"),
    "class in a function": ("def _f():\n    class _K:\n{block}\n    return _K\n", "_f().o"),
    "nested class": ("class _A:\n    class _K:\n{block}\n", "_A._K.o"),
    "metaclass": ("class _M(type):\n{block}\n\n\nclass _K(metaclass=_M):\n    pass\n", "_K.o"),
    "dataclass": ("@dataclasses.dataclass\nclass _K:\n{block}\n", "_K.o"),
}
DEPTH = {"module": 0, "function": 1, "async function": 1, "method": 2, "class": 1,
         "instance": 1, "class in a function": 2, "nested class": 2, "metaclass": 1,
         "dataclass": 1}
# Passes the gate on its own (test_the_header_alone_passes), so every block below is the
# binding's doing.
HEADER = ("import contextlib\nimport dataclasses\nimport os\n\n\n"
          "async def _agen():\n    yield 1\n\n\n"
          "def _result(coroutine):\n    try:\n        coroutine.send(None)\n"
          "    except StopIteration as stop:\n        return stop.value\n\n\n")
HEADER_LINES = HEADER.count("\n")


def _source(block: str, binding: str, nesting: str) -> str:
    statement, payload = BINDINGS[binding]
    body = textwrap.indent(statement, "    ")
    # A block template indents its body by one level; a bare `{body}` sits at the block's own.
    filled = block.format(body=body) if block != "{body}" else statement
    placed, reach = NESTINGS[nesting]
    return HEADER + placed.format(block=textwrap.indent(filled, "    " * DEPTH[nesting])) \
        + f"\nRAN = {reach}{payload}\n"


def _cases() -> list[tuple[str, str]]:
    cases = []
    for (nesting, _), (block_name, block) in itertools.product(
            NESTINGS.items(), {**BLOCKS, **ASYNC_BLOCKS}.items()):
        if block_name in ASYNC_BLOCKS and nesting != "async function":
            continue  # a SyntaxError anywhere else, which blocks for another reason
        for binding in BINDINGS:
            cases.append((f"{binding} in {block_name} in {nesting}",
                          _source(block, binding, nesting)))
    return cases


CASES = _cases()


def test_every_block_kind_python_has_is_in_the_family() -> None:
    """Each statement kind that holds other statements is in a template or a nesting here: a
    block kind added to Python fails this test until the family has it."""
    holders = {kind for kind in vars(ast).values() if isinstance(kind, type)
               and issubclass(kind, ast.stmt) and {"body", "cases"} & set(kind._fields)}
    in_family = {type(node) for _, source in CASES for node in ast.walk(ast.parse(source))}
    assert holders and holders <= in_family, holders - in_family


@pytest.mark.parametrize("source", [source for _, source in CASES],
                         ids=[name for name, _ in CASES])
def test_a_module_bound_in_any_block_at_any_nesting_blocks(source: str) -> None:
    ast.parse(source)  # the case is valid Python: a syntax error would block for nothing
    report = scan_files({"pkg/__init__.py": "", "pkg/plugin.py": source})
    below_header = [f for f in report.findings if f.line > HEADER_LINES]
    assert any(f.severity == "HIGH" for f in below_header), (source, report.findings)
    assert not any(f.tool == "syntax" for f in report.findings), report.findings


def test_the_header_alone_passes() -> None:
    report = scan_files({"pkg/__init__.py": "", "pkg/plugin.py": HEADER + "RAN = os.getcwd()\n"})
    assert report.verdict == "pass", report.findings


ISSUE_EXAMPLES = {
    "the report's example": "class _K:\n    import os as o\n\n\n"
                            "_K.o.system(\"echo ran > f.txt\")\n",
    "an instance": "class _K:\n    import os\n\n\n_K().os.system('echo ran')\n",
    "sys.modules": "class _K:\n    import sys\n\n\n_K.sys.modules['os'].system('echo ran')\n",
    "a from-import of a function": "class _K:\n    from subprocess import getoutput\n\n\n"
                                   "_K.getoutput('echo ran')\n",
}


@pytest.mark.parametrize("source", ISSUE_EXAMPLES.values(), ids=ISSUE_EXAMPLES.keys())
def test_the_reported_class_body_imports_block(source: str) -> None:
    report = scan_files({"pkg/__init__.py": "", "pkg/plugin.py": source})
    assert report.verdict == "block", report.findings
    messages = " ".join(f.message for f in report.findings)
    assert "class" in messages and "top of the module" in messages, messages


# Across the plugin's own files: a module bound in a block of one file, taken by another.
HELPERS_IN_BLOCKS = {
    "try": "try:\n    import os\nexcept ImportError:\n    os = None\n",
    "if": "if True:\n    import os\n",
    "with": "import contextlib\nwith contextlib.suppress(ImportError):\n    import os\n",
    "a function's global": "def _load():\n    global os\n    import os\n\n\n_load()\n",
    "an alias in a block": "import os\nif True:\n    _m = os\n",
}


@pytest.mark.parametrize("helpers", HELPERS_IN_BLOCKS.values(), ids=HELPERS_IN_BLOCKS.keys())
@pytest.mark.parametrize("use", ["from . import helpers\nhelpers.{name}.system('echo ran')\n",
                                 "from .helpers import {name} as _o\n_o.system('echo ran')\n"])
def test_a_module_bound_in_a_block_of_another_file_blocks(helpers: str, use: str) -> None:
    name = "_m" if "_m =" in helpers else "os"
    files = {"pkg/__init__.py": "", "pkg/helpers.py": helpers,
             "pkg/plugin.py": use.format(name=name)}
    report = scan_files(files)
    assert report.verdict == "block", report.findings


FINE = {
    "an optional import at the top": "try:\n    import yaml\nexcept ImportError:\n"
                                     "    yaml = None\n",
    "imports inside a function": "def run():\n    import json\n    if True:\n"
                                 "        from decimal import Decimal\n"
                                 "    return json.dumps(str(Decimal('1')))\n",
    "a class with ordinary attributes": "import dataclasses\nimport enum\n\n\n"
                                        "@dataclasses.dataclass\nclass Row:\n    name: str = ''\n"
                                        "    if True:\n        total: int = 0\n\n\n"
                                        "class Colour(enum.Enum):\n    RED = 1\n",
    "a method that imports": "class Plugin:\n    def on_command(self, name, payload):\n"
                             "        import json\n        return json.loads('{}')\n",
}


@pytest.mark.parametrize("source", FINE.values(), ids=FINE.keys())
def test_ordinary_blocks_and_classes_still_pass(source: str) -> None:
    report = scan_files({"pkg/__init__.py": "", "pkg/plugin.py": source})
    assert report.verdict == "pass", report.findings
