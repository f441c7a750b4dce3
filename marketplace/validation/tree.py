"""A plugin's file tree: the layout the contract asks for, the names an archive may hold, the
text of each file, and a plugin directory on disk."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from marketplace.validation.manifest import Manifest, PackageError, parse_manifest

# Size limits for uploads. A plugin is a few text files; these leave room for data tables.
MAX_ARCHIVE_BYTES = 10 * 1024 * 1024
MAX_ENTRIES = 1000
MAX_FILES = 300
MAX_FILE_BYTES = 1024 * 1024
MAX_TOTAL_BYTES = 5 * 1024 * 1024
# Source text compresses 3-10x; far beyond that the archive is built to explode when unpacked.
MAX_COMPRESSION_RATIO = 100

ROOT_FILES = frozenset({
    "plugin.toml", "README.md", "CHANGELOG.md", "LICENSE", "LICENSE.txt", "LICENSE.md",
    "pyproject.toml", ".gitignore", "MANIFEST.in",
})
EXTRA_DIRS = frozenset({"tests", "docs", "examples"})
# Left behind by editors, git and test runs when someone zips a working directory: dropped.
JUNK_PARTS = frozenset({"__pycache__", ".git", ".pytest_cache", ".mypy_cache", ".ruff_cache",
                        ".DS_Store", ".tox", ".idea", ".vscode"})
JUNK_TOP = frozenset({".venv", "venv", "build", "dist"})
# Code the safety gate cannot read (compiled) or that runs on interpreter start (.pth).
FORBIDDEN_SUFFIXES = (".pyc", ".pyo", ".so", ".pyd", ".dll", ".dylib", ".exe", ".pth")


def check_plugin_files(files: Mapping[str, str]) -> Manifest:
    """The manifest of a complete plugin tree (docs/engine.md, "The plugin contract"), or every
    reason it is not one."""
    if "plugin.toml" not in files:
        raise PackageError(["plugin.toml: missing at the root of the plugin (is the archive a"
                            " plugin directory?)"])
    manifest = parse_manifest(files["plugin.toml"])
    errors = _layout_errors(files, manifest.package)
    if errors:
        raise PackageError(errors)
    return manifest


def _layout_errors(files: Mapping[str, str], package: str) -> list[str]:
    errors: list[str] = []
    for required in (f"{package}/__init__.py", f"{package}/plugin.py", "README.md"):
        if required not in files:
            errors.append(f"{required}: missing (the plugin contract needs it)")
    if not any(_is_test_file(path) for path in files):
        errors.append("tests/: no test files (tests/test_*.py); every plugin ships its tests")
    if len(files) > MAX_FILES:
        errors.append(f"the plugin has {len(files)} files; at most {MAX_FILES} are accepted")
    for path in sorted(files):
        # Uploads met this rule on unpacking; a generated plugin's files meet it here.
        problem = check_path(path)
        if problem:
            errors.append(f"{path}: {problem}")
            continue
        top = PurePosixPath(path).parts[0]
        if len(PurePosixPath(path).parts) == 1 and path not in ROOT_FILES:
            errors.append(f"{path}: unexpected file at the root (allowed:"
                          f" {', '.join(sorted(ROOT_FILES))})")
        elif len(PurePosixPath(path).parts) > 1 and top not in EXTRA_DIRS | {package}:
            errors.append(f"{path}: unexpected directory {top!r}; the code belongs in"
                          f" {package}/ and the tests in tests/")
    return errors


def _is_test_file(path: str) -> bool:
    pure = PurePosixPath(path)
    return (pure.parts[0] == "tests" and pure.suffix == ".py"
            and (pure.name.startswith("test_") or pure.stem.endswith("_test")))


def check_path(name: str) -> str | None:
    """Why an archive member name is unacceptable, or None."""
    if not name or "\x00" in name or "\\" in name:
        return "has an invalid name"
    pure = PurePosixPath(name)
    if pure.is_absolute() or re.match(r"^[A-Za-z]:", name):
        return "is an absolute path"
    if any(part == ".." for part in pure.parts):
        return "climbs out of the plugin directory (..)"
    if name.lower().endswith(FORBIDDEN_SUFFIXES):
        return "is compiled or start-up code, which the marketplace does not accept"
    return None


def text_files(raw: Mapping[str, bytes]) -> dict[str, str]:
    """UTF-8 text of every file; the safety gate reads source, so binaries are refused."""
    result: dict[str, str] = {}
    errors: list[str] = []
    for path, data in sorted(raw.items()):
        problem = check_path(path)
        if problem:
            errors.append(f"{path}: {problem}")
            continue
        try:
            result[path] = data.decode("utf-8")
        except UnicodeDecodeError:
            errors.append(f"{path}: not UTF-8 text; binary files are not accepted")
    if errors:
        raise PackageError(errors)
    return result


def files_from_directory(root: Path) -> dict[str, str]:
    """A plugin directory on disk (the command line), with the same rules as an upload."""
    if not (root / "plugin.toml").is_file():
        raise PackageError([f"{root}: no plugin.toml here; give the plugin's directory"])
    raw: dict[str, bytes] = {}
    total = 0
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if is_junk(rel) or path.is_dir():
            continue
        if path.is_symlink() or not path.is_file():
            raise PackageError([f"{rel}: symbolic links and special files are not accepted"])
        size = path.stat().st_size
        total += size
        if size > MAX_FILE_BYTES or total > MAX_TOTAL_BYTES:
            raise PackageError([f"{rel}: the plugin is larger than the"
                                f" {MAX_TOTAL_BYTES // 2**20} MB limit (or this file than"
                                f" {MAX_FILE_BYTES // 2**20} MB)"])
        raw[rel] = path.read_bytes()
    return text_files(raw)


def is_junk(path: str) -> bool:
    parts = PurePosixPath(path).parts
    if parts and parts[0] in JUNK_TOP:
        return True
    return any(part in JUNK_PARTS or part.endswith(".egg-info") for part in parts)

