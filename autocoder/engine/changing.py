"""A change run: a run that starts from the version of a plugin in use, not from the scaffold
(docs/engine.md, "Change runs"; issue 29).

The runs app hands the loop the version's files and number (`RunView.base_files`,
`base_version`); the loop never reads the marketplace. A change run

- starts from those files plus the spec's examples (the cases that motivated the change) as a
  read-only `tests/test_regression_<n>.py`, built by the scaffold's acceptance-test generator;
- checks once, before the first plan, whether those tests fail on the version in use, and says
  so in plain words (change_check.py);
- needs every test of the version in use to keep passing: its acceptance tests and every
  regression test are required, a test file of the version cannot be deleted, and a test
  function removed or with fewer asserts is a reason for a person to look (`test_losses`);
- keeps the version's plugin.toml (name, summary, settings, inputs), adds the spec's new
  commands and writes the next version number from the two manifests (`change_manifest`).
"""

from __future__ import annotations

import ast
import dataclasses
import re
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from autocoder.engine.scaffold import ACCEPTANCE_TEST_PATH, protected_paths, regression_tests
from autocoder.engine.spec import Spec
from autocoder.plugins import CommandDecl, Permissions, PluginManifest, read_manifest
from autocoder.plugins.render import render_manifest
from autocoder.plugins.versions import VersionBump, next_version

REGRESSION_PREFIX = "tests/test_regression_"
_REGRESSION = re.compile(r"^tests/test_regression_(\d+)\.py$")
KEPT_TEST_REASON = "a test of the version in use cannot be deleted; it was kept"


class ChangeRun(Protocol):
    """What a change reads of its run (the loop's RunView, the runs app's Run): the files and
    number of the version in use it starts from ({} and "" for a new plugin), whether the
    version's tests may change with it, and the note on those tests (change_check.py)."""

    @property
    def base_files(self) -> Any: ...
    @property
    def base_version(self) -> str: ...
    @property
    def base_tests_may_change(self) -> bool: ...
    @property
    def base_note(self) -> str: ...


def base_of(run: ChangeRun) -> dict[str, str]:
    """The files of the version a change run starts from ({} for a new plugin)."""
    return dict(run.base_files or {})


def base_version(run: ChangeRun) -> str:
    """The number of the version in use: the run's, else its plugin.toml's."""
    manifest = read_manifest(base_of(run).get("plugin.toml", ""))
    return str(run.base_version or (manifest.version if manifest else ""))


def regression_path(base: Mapping[str, str]) -> str:
    """The next free tests/test_regression_<n>.py of the version's files (earlier changes'
    files stay, so a plugin keeps every case that ever went wrong)."""
    taken = [int(m.group(1)) for path in base if (m := _REGRESSION.match(path))]
    return f"{REGRESSION_PREFIX}{max(taken, default=0) + 1}.py"


def start_files(spec: Spec, base: Mapping[str, str]) -> dict[str, str]:
    """What a change run's first iteration starts from: the version's files and the new
    regression tests (deterministic: every phase of the iteration sees the same files)."""
    files = {**base, regression_path(base): regression_tests(spec)}
    return dict(sorted(files.items()))


def is_regression(path: str) -> bool:
    return bool(_REGRESSION.match(path))


def tests_may_change(run: ChangeRun) -> bool:
    """Whether the change request says behaviour changes, so the version's tests may too."""
    return bool(base_of(run)) and bool(run.base_tests_may_change)


def change_protected(run: ChangeRun, spec: Spec, files: Mapping[str, str]) -> frozenset[str]:
    """The paths the model may never write: a new plugin's, and in a change run every
    regression test (and not the version's acceptance tests when behaviour changes)."""
    if not base_of(run):
        return protected_paths(spec)
    protected = protected_paths(spec) | {path for path in files if is_regression(path)}
    return protected - {ACCEPTANCE_TEST_PATH} if tests_may_change(run) else protected


def keep_base_tests(base: Mapping[str, str], before: Mapping[str, str], files: dict[str, str],
                    *, may_change: bool = False) -> tuple[dict[str, str], list[dict[str, str]]]:
    """A reply may not delete a test file of the version in use: the file is put back, and
    the refusal listed like any refused file (unless behaviour changes: then the loss is a
    reason at a gate, `test_losses`)."""
    if not base or may_change:
        return files, []
    gone = sorted(path for path in base
                  if _is_test(path) and path in before and path not in files)
    if not gone:
        return files, []
    kept = dict(sorted({**files, **{path: before[path] for path in gone}}.items()))
    return kept, [{"path": path, "reason": KEPT_TEST_REASON} for path in gone]


def _is_test(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return path.startswith("tests/") and name.startswith("test_") and name.endswith(".py")


# -- which tests must pass -----------------------------------------------------------------------


def required_nodeids(files: Mapping[str, str], *, may_change: bool = False) -> list[str]:
    """The tests a change run must pass: the acceptance tests of the version in use (unless
    behaviour changes, when they may be rewritten) and every regression test (those of
    earlier changes and this run's)."""
    paths = [*([] if may_change else [ACCEPTANCE_TEST_PATH]),
             *sorted(p for p in files if is_regression(p))]
    return [f"{path}::{name}" for path in paths if path in files
            for name in test_asserts(files[path])]


def test_asserts(text: str) -> dict[str, int]:
    """The test functions of a test file and how many asserts each makes ({} when the file
    cannot be read as Python)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return {}
    found: dict[str, int] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and \
                node.name.startswith("test"):
            found[node.name] = sum(isinstance(n, ast.Assert) or _raises_check(n)
                                   for n in ast.walk(node))
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and \
                        item.name.startswith("test"):
                    found[f"{node.name}::{item.name}"] = sum(
                        isinstance(n, ast.Assert) or _raises_check(n) for n in ast.walk(item))
    return found


def _raises_check(node: ast.AST) -> bool:
    """`with pytest.raises(...)`: a check too."""
    if not isinstance(node, ast.With):
        return False
    return any(isinstance(i.context_expr, ast.Call) and
               getattr(i.context_expr.func, "attr", "") == "raises" for i in node.items)


def test_losses(before: Mapping[str, str], after: Mapping[str, str]) -> list[str]:
    """The tests of `before` that `after` removes or weakens (fewer asserts), in words for the
    person who must look ("removes the test tests/test_x.py::test_y")."""
    losses = []
    for path in sorted(p for p in before if _is_test(p)):
        old = test_asserts(before[path])
        if path not in after:
            losses += [f"removes the test {path}::{name}" for name in old]
            continue
        new = test_asserts(after[path])
        for name, count in old.items():
            if name not in new:
                losses.append(f"removes the test {path}::{name}")
            elif new[name] < count:
                losses.append(f"weakens the test {path}::{name} ({new[name]} checks instead "
                              f"of {count})")
    return losses


def change_reasons(run: ChangeRun, previous: Mapping[str, str], files: Mapping[str, str],
                   rejected: Sequence[Mapping[str, Any]]) -> list[str]:
    """Why a person must look at an iteration of a change run ([] for a new plugin)."""
    if not base_of(run):
        return []
    reasons = test_losses(previous, files)
    kept = sorted(r["path"] for r in rejected if r.get("reason") == KEPT_TEST_REASON)
    if kept:
        reasons.append(f"the reply tried to delete tests of the version in use "
                       f"({', '.join(kept)}); they were kept")
    touched = sorted(r["path"] for r in rejected if is_regression(str(r.get("path", ""))))
    if touched:
        reasons.append(f"the reply tried to change the regression tests ({', '.join(touched)});"
                       " the change was refused")
    return reasons


# -- plugin.toml ---------------------------------------------------------------------------------


def change_manifest(spec: Spec, base: Mapping[str, str], version: str, *,
                    permissions: Permissions, libraries: Sequence[str],
                    words_from: str = "") -> str | None:
    """A change run's plugin.toml: the version's own (None when it cannot be read), with the
    permissions granted so far, the libraries the code imports, the spec's new commands, the
    summary and descriptions the change rewrote (those of `words_from`, the candidate's
    plugin.toml; change_words.py) and the next version number."""
    from autocoder.engine.change_words import with_words

    old = _base_manifest(base, version)
    if old is None:
        return None
    new = with_words(_changed(old, spec, permissions=permissions, libraries=libraries),
                     read_manifest(words_from) if words_from else None)
    return render_manifest(dataclasses.replace(new, version=next_version(old, new).version))


def version_bump(base: Mapping[str, str], version: str,
                 files: Mapping[str, str]) -> VersionBump | None:
    """The next version for publishing `files` after the version in use (None when either
    plugin.toml cannot be read)."""
    old = _base_manifest(base, version)
    new = read_manifest(files.get("plugin.toml", ""))
    if old is None or new is None:
        return None
    return next_version(old, dataclasses.replace(new, version=old.version))


def bump_words(bump: VersionBump) -> list[str]:
    """"minor: a new setting 'token'", one line per reason ("patch: a fix ..." for none)."""
    if not bump.reasons:
        return [f"{bump.kind}: a fix, nothing the plugin's callers use changes"]
    return [f"{bump.kind}: {reason}" for reason in bump.reasons]


def _base_manifest(base: Mapping[str, str], version: str) -> PluginManifest | None:
    manifest = read_manifest(base.get("plugin.toml", ""))
    if manifest is None:
        return None
    return dataclasses.replace(manifest, version=version) if version else manifest


def _changed(old: PluginManifest, spec: Spec, *, permissions: Permissions,
             libraries: Sequence[str]) -> PluginManifest:
    known = {command.name for command in old.commands}
    added = tuple(CommandDecl(name=command.name, description=command.description)
                  for command in spec.commands if command.name not in known)
    return dataclasses.replace(old, permissions=permissions, libraries=tuple(libraries),
                               commands=(*old.commands, *added))


# -- the publish request -------------------------------------------------------------------------


def publish_change(run: ChangeRun, spec: Mapping[str, Any], files: Mapping[str, str],
                   ) -> dict[str, Any]:
    """What a change run's publish request adds for the reviewer ({} for a new plugin): the
    version it follows and the next one with why ("minor: a new command 'x'"), the diff
    against the version in use, the new tests, the tests it removes or weakens and the cases
    that motivated the change (the examples of the run's spec, a dict)."""
    from autocoder.engine.replies import unified_diff

    base = base_of(run)
    if not base or not files:
        return {}
    version = base_version(run)
    bump = version_bump(base, version, files)
    cases = [{"command": command.get("name", ""), "input": example.get("input"),
              "expected": example.get("output")}
             for command in spec.get("commands") or [] for example in command.get("examples") or []]
    return {"change": {
        "from_version": version,
        "version": bump.version if bump else "",
        "kind": bump.kind if bump else "",
        "reasons": bump_words(bump) if bump else [],
        "new_tests": sorted(p for p in files if _is_test(p) and p not in base),
        "tests_lost": test_losses(base, files),
        "diff": unified_diff(dict(base), dict(files)),
        "base_check": str(run.base_note),
        "cases": cases,
    }}
