"""What a plugin imports, against what the plugin runtime has.

Plugin code runs on the plugin runtime (autocoder/runtime): the standard library plus a short
pinned list of libraries. An import of anything else would fail there (or, once installed
elsewhere, pull in something nobody reviewed), so the gate refuses it with a plain message,
and the libraries a plugin does use are written into its plugin.toml and its wheel's
requirements. See docs/plugins.md ("What a plugin can use").
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import PurePosixPath

from autocoder.runtime import LIBRARIES, Library, library_for_module, plugin_modules, test_modules
from autocoder.safety.rules import is_test_file
from autocoder.safety.types import Finding

# The runner's own module, written beside the plugin's files only while its tests run.
_RUNNER_MODULES = frozenset({"_autocoder_pytest_report"})


def unavailable_imports(files: dict[str, str]) -> list[Finding]:
    """A HIGH finding for every import of a module the plugin runtime does not have."""
    local = local_modules(files)
    findings = []
    for path, source in files.items():
        allowed = (test_modules() if is_test_file(path) else plugin_modules()) | local
        for line, module in imported_modules(source):
            top = module.split(".", 1)[0]
            if top in sys.stdlib_module_names or top in allowed or top in _RUNNER_MODULES:
                continue
            findings.append(Finding("policy", "unavailable-import", "HIGH", path, line,
                                    _message(module, is_test_file(path))))
    return findings


def used_libraries(files: dict[str, str]) -> list[Library]:
    """The runtime's libraries that the plugin's own code (not its tests) imports."""
    used = {library_for_module(module) for path, source in files.items()
            if not is_test_file(path) for _, module in imported_modules(source)}
    return [lib for lib in LIBRARIES if lib in used]


def local_modules(files: dict[str, str]) -> frozenset[str]:
    """Top-level names the plugin itself provides (its package, tests, loose modules)."""
    names = set()
    for path in files:
        parts = PurePosixPath(path).parts
        if len(parts) > 1:
            names.add(parts[0])
        elif path.endswith(".py"):
            names.add(path[:-3])
    return frozenset(names)


def imported_modules(source: str) -> Iterator[tuple[int, str]]:
    """(line, module) for each absolute import; a file that does not parse yields nothing
    (the policy reports the syntax error)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield node.lineno, node.module


def _message(module: str, in_tests: bool) -> str:
    names = ", ".join(name for lib in LIBRARIES for name in lib.modules)
    where = "a plugin's tests" if in_tests else "plugins"
    extra = " and pytest" if in_tests else ""
    return (f"`import {module}`: {module.split('.', 1)[0]} is not available to {where}; "
            f"the plugin runtime has the standard library{extra} and {names} "
            "(see docs/plugins.md)")
