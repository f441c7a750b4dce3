"""Pure checks of what a team hands the marketplace: plugin.toml, the file tree, zips and wheels.

Nothing here touches the database, the disk or the sandbox, so every rule is cheap to test and
runs before anything is created. Errors are collected and reported together, each naming the
file (and line, for TOML) so the person fixing the package fixes it in one go.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import re
import stat
import tarfile
import tomllib
import zipfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from email.parser import HeaderParser
from pathlib import Path, PurePosixPath
from typing import Any, Protocol

import markdown
import nh3
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from autocoder.engine.spec import NAME_PATTERN, package_name
from autocoder.runtime.declarations import declaration_errors

# Size limits for uploads. A plugin is a few text files; these leave room for data tables.
MAX_ARCHIVE_BYTES = 10 * 1024 * 1024
MAX_ENTRIES = 1000
MAX_FILES = 300
MAX_FILE_BYTES = 1024 * 1024
MAX_TOTAL_BYTES = 5 * 1024 * 1024
# Source text compresses 3-10x; far beyond that the archive is built to explode when unpacked.
MAX_COMPRESSION_RATIO = 100
MAX_SUMMARY_CHARS = 4000
MAX_TAGS = 10
TAG_PATTERN = re.compile(r"[a-z0-9][a-z0-9-]{0,29}")

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
MANIFEST_KEYS = ("name", "version", "summary", "entry", "category", "tags", "requires_python")
COMMAND_KEYS = ("name", "description", "examples", "input")
FILESYSTEM_MODES = ("none", "workdir")
# Tags the wheels we build and accept carry: pure Python, any platform.
PURE_TAGS = frozenset({"py3-none-any", "py2.py3-none-any"})
README_TAGS = nh3.ALLOWED_TAGS - {"img"}  # remote images would track readers; none are stored


class PackageError(ValueError):
    """Every problem found in an upload; `errors` lists them, each naming where it is."""

    def __init__(self, errors: list[str]) -> None:
        self.errors = list(errors)
        super().__init__("; ".join(self.errors))


@dataclass(frozen=True)
class CommandInfo:
    name: str
    description: str = ""
    examples: tuple[dict[str, Any], ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description,
                "examples": [dict(example) for example in self.examples]}


@dataclass(frozen=True)
class Manifest:
    name: str
    version: str
    summary: str
    entry: str
    package: str
    network: bool = False
    filesystem: str = "none"
    commands: tuple[CommandInfo, ...] = ()
    category: str = ""
    tags: tuple[str, ...] = ()
    requires_python: str = ""
    libraries: tuple[str, ...] = ()  # pinned plugin-runtime libraries, from [runtime]
    raw: Mapping[str, Any] = field(default_factory=dict)

    @property
    def normalized_name(self) -> str:
        return normalize_name(self.name)

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "version": self.version, "summary": self.summary,
                "entry": self.entry, "package": self.package,
                "permissions": {"network": self.network, "filesystem": self.filesystem},
                "commands": [command.as_dict() for command in self.commands],
                "category": self.category, "tags": list(self.tags),
                "requires_python": self.requires_python, "libraries": list(self.libraries)}


def normalize_name(name: str) -> str:
    """PEP 503: lower case, every run of -, _ and . becomes one -."""
    return re.sub(r"[-_.]+", "-", name).lower()


def canonical_version(text: str) -> str:
    return str(Version(text))


# -- plugin.toml ---------------------------------------------------------------------------------


def parse_manifest(text: str) -> Manifest:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PackageError([f"plugin.toml: not valid TOML ({exc})"]) from None
    errors: list[str] = []
    for key in data:
        if key not in ("plugin", "permissions", "commands", "runtime", "settings", "tool"):
            errors.append(f"plugin.toml: unknown table or key {key!r} (expected [plugin],"
                          " [permissions], [runtime], [[settings]], [[commands]])")
    plugin = _table(data, "plugin", errors, required=True)
    permissions = _table(data, "permissions", errors, required=False)
    manifest = _manifest_fields(plugin, errors)
    network, filesystem = _permissions(permissions, errors)
    commands = _commands(data.get("commands"), errors)
    libraries = _libraries(_table(data, "runtime", errors, required=False), errors)
    # Declared settings and input schemas: the runtime's rules, the ones activation relies on.
    errors.extend(declaration_errors(data))
    if errors:
        raise PackageError(errors)
    return Manifest(**manifest, network=network, filesystem=filesystem, commands=commands,
                    libraries=libraries, raw=data)


def _libraries(runtime: dict[str, Any], errors: list[str]) -> tuple[str, ...]:
    """[runtime] libraries: the plugin runtime's libraries the plugin uses, each pinned to the
    runtime's version ("openpyxl==3.1.5" or just "openpyxl")."""
    from autocoder.runtime import LIBRARIES

    value = runtime.get("libraries", [])
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        errors.append("plugin.toml: [runtime] libraries must be a list of strings")
        return ()
    known = {normalize_name(lib.distribution): lib for lib in LIBRARIES}
    pins = []
    for item in value:
        name, _, version = item.partition("==")
        lib = known.get(normalize_name(name.strip()))
        if lib is None or (version and version.strip() != lib.version):
            offered = ", ".join(f"{lib.distribution}=={lib.version}" for lib in LIBRARIES)
            errors.append(f"plugin.toml: [runtime] library {item!r} is not in the plugin "
                          f"runtime (it has {offered}; see docs/plugins.md)")
            continue
        pins.append(f"{lib.distribution}=={lib.version}")
    return tuple(pins)


def _table(data: dict[str, Any], key: str, errors: list[str], *,
           required: bool) -> dict[str, Any]:
    value = data.get(key)
    if value is None:
        if required:
            errors.append(f"plugin.toml: the [{key}] table is missing")
        return {}
    if not isinstance(value, dict):
        errors.append(f"plugin.toml: [{key}] must be a table")
        return {}
    return value


def _manifest_fields(plugin: dict[str, Any], errors: list[str]) -> dict[str, Any]:
    for key in plugin:
        if key not in MANIFEST_KEYS:
            errors.append(f"plugin.toml: [plugin] has an unknown key {key!r}"
                          f" (expected {', '.join(MANIFEST_KEYS)})")
    name = _name(plugin.get("name"), errors)
    package = package_name(name) if name else ""
    return {
        "name": name,
        "version": _version(plugin.get("version"), errors),
        "summary": _summary(plugin.get("summary"), errors),
        "entry": _entry(plugin.get("entry"), package, errors),
        "package": package,
        "category": _optional_text(plugin, "category", errors),
        "tags": _tags(plugin.get("tags", []), errors),
        "requires_python": _requires_python(plugin.get("requires_python", ""), errors),
    }


def _name(value: object, errors: list[str]) -> str:
    # The spec's rule, plus PEP 508's: a distribution name starts and ends with a letter/digit.
    if (not isinstance(value, str) or not NAME_PATTERN.fullmatch(value)
            or not (value[0].isalnum() and value[-1].isalnum())):
        errors.append("plugin.toml: [plugin] name must be 1-64 characters: letters, digits,"
                      f" - and _, starting and ending with a letter or digit (got {value!r})")
        return ""
    return value


def _version(value: object, errors: list[str]) -> str:
    if not isinstance(value, str):
        errors.append("plugin.toml: [plugin] version must be a string like \"1.0.0\""
                      f" (got {value!r})")
        return ""
    try:
        parsed = Version(value)
    except InvalidVersion:
        errors.append(f"plugin.toml: [plugin] version {value!r} is not a valid version"
                      " (PEP 440, e.g. 1.0.0 or 1.1.0rc1)")
        return ""
    if parsed.local:
        errors.append(f"plugin.toml: [plugin] version {value!r} has a local part (+...),"
                      " which package indexes do not accept")
        return ""
    return str(parsed)


def _summary(value: object, errors: list[str]) -> str:
    if not isinstance(value, str) or not value.strip():
        errors.append("plugin.toml: [plugin] summary is required (one paragraph of text)")
        return ""
    if len(value) > MAX_SUMMARY_CHARS:
        errors.append(f"plugin.toml: [plugin] summary must be at most {MAX_SUMMARY_CHARS}"
                      f" characters (got {len(value)})")
    return value.strip()


def _entry(value: object, package: str, errors: list[str]) -> str:
    expected = f"{package}.plugin:Plugin" if package else "<package>.plugin:Plugin"
    if value != expected:
        errors.append(f"plugin.toml: [plugin] entry must be {expected!r} (got {value!r})")
    return expected


def _optional_text(table: dict[str, Any], key: str, errors: list[str]) -> str:
    value = table.get(key, "")
    if not isinstance(value, str):
        errors.append(f"plugin.toml: [plugin] {key} must be a string")
        return ""
    return value.strip()


def _tags(value: object, errors: list[str]) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(tag, str) for tag in value):
        errors.append("plugin.toml: [plugin] tags must be a list of strings")
        return ()
    try:
        return clean_tags(value)
    except PackageError as exc:
        errors.extend(f"plugin.toml: [plugin] {error}" for error in exc.errors)
        return ()


def clean_tags(tags: Iterable[str]) -> tuple[str, ...]:
    """Lower-cased, de-duplicated tags in their first order; PackageError names a bad one."""
    result: list[str] = []
    for raw in tags:
        tag = raw.strip().lower().replace(" ", "-")
        if not tag:
            continue
        if not TAG_PATTERN.fullmatch(tag):
            raise PackageError([f"tag {raw!r} must be 1-30 letters, digits or -"])
        if tag not in result:
            result.append(tag)
    if len(result) > MAX_TAGS:
        raise PackageError([f"at most {MAX_TAGS} tags (got {len(result)})"])
    return tuple(result)


def _requires_python(value: object, errors: list[str]) -> str:
    if not isinstance(value, str):
        errors.append("plugin.toml: [plugin] requires_python must be a string like \">=3.11\"")
        return ""
    try:
        return str(SpecifierSet(value)) if value.strip() else ""
    except InvalidSpecifier:
        errors.append(f"plugin.toml: [plugin] requires_python {value!r} is not a version"
                      " specifier (e.g. \">=3.11\")")
        return ""


def _permissions(table: dict[str, Any], errors: list[str]) -> tuple[bool, str]:
    for key in table:
        if key not in ("network", "filesystem"):
            errors.append(f"plugin.toml: [permissions] has an unknown key {key!r}"
                          " (expected network, filesystem)")
    network = table.get("network", False)
    if not isinstance(network, bool):
        errors.append("plugin.toml: [permissions] network must be true or false")
        network = False
    filesystem = table.get("filesystem", "none")
    if filesystem not in FILESYSTEM_MODES:
        errors.append(f"plugin.toml: [permissions] filesystem must be one of"
                      f" {', '.join(FILESYSTEM_MODES)} (got {filesystem!r})")
        filesystem = "none"
    return network, filesystem


def _commands(value: object, errors: list[str]) -> tuple[CommandInfo, ...]:
    if not isinstance(value, list) or not value:
        errors.append("plugin.toml: at least one [[commands]] table is required")
        return ()
    commands: list[CommandInfo] = []
    for i, raw in enumerate(value, start=1):
        command = _command(raw, i, errors)
        if command is None:
            continue
        if any(other.name == command.name for other in commands):
            errors.append(f"plugin.toml: command {command.name!r} is declared twice")
        commands.append(command)
    return tuple(commands)


def _command(raw: object, index: int, errors: list[str]) -> CommandInfo | None:
    where = f"plugin.toml: [[commands]] #{index}"
    if not isinstance(raw, dict):
        errors.append(f"{where} must be a table")
        return None
    for key in raw:
        if key not in COMMAND_KEYS:
            errors.append(f"{where} has an unknown key {key!r}"
                          f" (expected {', '.join(COMMAND_KEYS)})")
    name = raw.get("name")
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
        errors.append(f"{where} name must be 1-64 letters, digits, - or _ (got {name!r})")
        return None
    description = raw.get("description", "")
    if not isinstance(description, str):
        errors.append(f"{where} description must be a string")
        description = ""
    return CommandInfo(name=name, description=description.strip(),
                       examples=_examples(raw.get("examples", []), f"{where} examples", errors))


def _examples(value: object, where: str, errors: list[str]) -> tuple[dict[str, Any], ...]:
    if not isinstance(value, list) or not all(
            isinstance(item, dict) and isinstance(item.get("input"), dict) and "output" in item
            for item in value):
        errors.append(f"{where} must be a list of {{input = {{...}}, output = ...}} tables")
        return ()
    return tuple({"input": item["input"], "output": item["output"]} for item in value)


# -- the file tree -------------------------------------------------------------------------------


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
        if _is_junk(rel) or path.is_dir():
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


def _is_junk(path: str) -> bool:
    parts = PurePosixPath(path).parts
    if parts and parts[0] in JUNK_TOP:
        return True
    return any(part in JUNK_PARTS or part.endswith(".egg-info") for part in parts)


# -- zip archives --------------------------------------------------------------------------------


def read_zip(data: bytes, *, what: str = "the archive") -> dict[str, bytes]:
    """Members of a zip as {path: bytes}, refusing traversal, links, bombs and duplicates."""
    if len(data) > MAX_ARCHIVE_BYTES:
        raise PackageError([f"{what} is {len(data) // 2**20} MB; at most"
                            f" {MAX_ARCHIVE_BYTES // 2**20} MB are accepted"])
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        members = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError) as exc:
        raise PackageError([f"{what} is not a valid zip file ({exc})"]) from None
    if len(members) > MAX_ENTRIES:
        raise PackageError([f"{what} has {len(members)} entries; at most {MAX_ENTRIES}"])
    errors = _member_errors(members, len(data))
    if errors:
        raise PackageError(errors)
    return _read_members(archive, members, what)


def _member_errors(members: list[zipfile.ZipInfo], archive_size: int) -> list[str]:
    errors: list[str] = []
    seen: set[str] = set()
    declared = 0
    for info in members:
        name = info.filename
        declared += info.file_size
        if _is_junk(name):
            continue
        problem = check_path(name.rstrip("/") if info.is_dir() else name)
        mode = info.external_attr >> 16
        if problem:
            errors.append(f"{name}: {problem}")
        elif stat.S_ISLNK(mode):
            errors.append(f"{name}: symbolic links are not accepted")
        elif info.flag_bits & 0x1:
            errors.append(f"{name}: encrypted entries are not accepted")
        elif name in seen:
            errors.append(f"{name}: appears twice in the archive")
        elif not info.is_dir() and info.file_size > MAX_FILE_BYTES:
            errors.append(f"{name}: unpacks to {info.file_size} bytes, over the"
                          f" {MAX_FILE_BYTES // 2**20} MB limit per file")
        seen.add(name)
    if declared > MAX_TOTAL_BYTES:
        errors.append(f"the archive unpacks to {declared} bytes, over the"
                      f" {MAX_TOTAL_BYTES // 2**20} MB limit (a zip bomb?)")
    elif archive_size and declared > 4096 and declared / archive_size > MAX_COMPRESSION_RATIO:
        errors.append(f"the archive unpacks to {declared // archive_size}x its size;"
                      " that ratio only occurs in zip bombs")
    return errors


def _read_members(archive: zipfile.ZipFile, members: list[zipfile.ZipInfo],
                  what: str) -> dict[str, bytes]:
    result: dict[str, bytes] = {}
    total = 0
    for info in members:
        if info.is_dir() or _is_junk(info.filename):
            continue
        # Read at most one byte past the limit: headers can lie about the unpacked size.
        try:
            with archive.open(info) as handle:
                content = handle.read(MAX_FILE_BYTES + 1)
        except (zipfile.BadZipFile, NotImplementedError, OSError, EOFError) as exc:
            raise PackageError([f"{info.filename}: cannot be unpacked ({exc})"]) from None
        total += len(content)
        if len(content) > MAX_FILE_BYTES or total > MAX_TOTAL_BYTES:
            raise PackageError([f"{info.filename}: unpacks to more than its header says and past"
                                " the size limit (a zip bomb?)"])
        result[info.filename] = content
    if not result:
        raise PackageError([f"{what} is empty"])
    return result


def files_from_zip(data: bytes) -> dict[str, str]:
    """A zipped plugin directory: plugin.toml at the root or inside one top-level folder."""
    raw = read_zip(data)
    if "plugin.toml" not in raw:
        raw = _strip_single_folder(raw)
    return text_files(raw)


def _strip_single_folder(raw: dict[str, bytes]) -> dict[str, bytes]:
    tops = {PurePosixPath(path).parts[0] for path in raw}
    if len(tops) != 1 or all(len(PurePosixPath(path).parts) == 1 for path in raw):
        return raw
    top = tops.pop()
    return {path[len(top) + 1:]: data for path, data in raw.items()}


# -- wheels --------------------------------------------------------------------------------------


def files_from_wheel(data: bytes, filename: str) -> dict[str, str]:
    """The plugin tree inside a pure-Python wheel.

    A wheel carries its manifest as `<package>/plugin.toml` and its tests in `<package>/tests/`
    (they are moved back to the root here); the README is `<package>/README.md` or the long
    description in METADATA. Anything installed outside the package is refused.
    """
    try:
        dist, version, _build, tags = parse_wheel_filename(filename)
    except InvalidWheelFilename as exc:
        raise PackageError([f"{filename}: not a wheel file name ({exc})"]) from None
    if not {str(tag) for tag in tags} & PURE_TAGS and not _all_pure(tags):
        raise PackageError([f"{filename}: only pure-Python wheels (py3-none-any) are accepted"])
    raw = read_zip(data, what=filename)
    dist_info = _dist_info_dir(raw, filename)
    package, errors = _wheel_package(raw, dist_info, filename)
    if errors:
        raise PackageError(errors)
    tree = _wheel_tree(raw, package, dist_info)
    files = text_files(tree)
    manifest = check_plugin_files(files)
    if canonicalize_name(manifest.name) != dist or Version(manifest.version) != version:
        raise PackageError([f"{filename}: the wheel is {dist} {version} but its plugin.toml says"
                            f" {manifest.name} {manifest.version}"])
    return files


def _all_pure(tags: Iterable[Any]) -> bool:
    return all(tag.abi == "none" and tag.platform == "any" and tag.interpreter.startswith("py")
               for tag in tags)


def _dist_info_dir(raw: Mapping[str, bytes], filename: str) -> str:
    dirs = {PurePosixPath(path).parts[0] for path in raw
            if PurePosixPath(path).parts[0].endswith(".dist-info")}
    if len(dirs) != 1 or f"{next(iter(dirs))}/METADATA" not in raw:
        raise PackageError([f"{filename}: no single .dist-info directory with METADATA;"
                            " is it a wheel built by a standard tool?"])
    return dirs.pop()


def _wheel_package(raw: Mapping[str, bytes], dist_info: str,
                   filename: str) -> tuple[str, list[str]]:
    errors: list[str] = []
    tops = set()
    for path in raw:
        parts = PurePosixPath(path).parts
        if parts[0] == dist_info:
            continue
        if len(parts) == 1 or parts[0].endswith(".data"):
            errors.append(f"{filename}: {path} would be installed outside the plugin's package")
        else:
            tops.add(parts[0])
    if not errors and len(tops) != 1:
        errors.append(f"{filename}: must contain exactly one package directory (found"
                      f" {', '.join(sorted(tops)) or 'none'})")
    package = tops.pop() if len(tops) == 1 else ""
    if package and f"{package}/plugin.toml" not in raw:
        errors.append(f"{filename}: {package}/plugin.toml is missing (wheels carry their"
                      " manifest inside the package)")
    return package, errors


def _wheel_tree(raw: Mapping[str, bytes], package: str, dist_info: str) -> dict[str, bytes]:
    tree: dict[str, bytes] = {}
    for path, content in raw.items():
        if path.startswith(f"{dist_info}/"):
            continue
        inner = path[len(package) + 1:]
        if inner in ("plugin.toml", "README.md") or inner.startswith("tests/"):
            tree[inner] = content
        else:
            tree[path] = content
    if "README.md" not in tree:
        tree["README.md"] = _metadata_description(raw[f"{dist_info}/METADATA"]).encode()
    return tree


def _metadata_description(metadata: bytes) -> str:
    message = HeaderParser().parsestr(metadata.decode("utf-8", errors="replace"))
    body = message.get_payload()
    return (body if isinstance(body, str) and body.strip() else
            f"# {message.get('Name', 'plugin')}\n\n{message.get('Summary', '')}\n")


# -- what the marketplace serves -----------------------------------------------------------------
# The portal writes its own wheel and sdist (marketplace/build.py); before they are stored, each
# file in them is checked against the reviewed files with the rules uploaded wheels meet, so a
# packaging mistake can never put an unreviewed file (a .pth, a stray module) on the index.

WHEEL_DIST_INFO_FILES = frozenset({"METADATA", "WHEEL", "RECORD"})


class ArtifactLike(Protocol):
    @property
    def kind(self) -> str: ...
    @property
    def filename(self) -> str: ...
    @property
    def data(self) -> bytes: ...


def check_served_artifacts(artifacts: Iterable[ArtifactLike], *, files: Mapping[str, str],
                           manifest: Manifest, portal_files: Mapping[str, str],
                           left_out: Iterable[str] = ()) -> None:
    """PackageError unless there is one wheel and one sdist, each holding only reviewed files.

    `portal_files` are the sdist files the portal writes itself (PKG-INFO, its pyproject.toml,
    the package's copy of plugin.toml) with their expected text; `left_out` are reviewed files
    deliberately not shipped (the plugin's own build configuration)."""
    by_kind: dict[str, list[ArtifactLike]] = {}
    for artifact in artifacts:
        by_kind.setdefault(artifact.kind, []).append(artifact)
    if sorted(by_kind) != ["sdist", "wheel"] or any(len(v) != 1 for v in by_kind.values()):
        raise PackageError(["build: expected exactly one wheel and one sdist"])
    wheel, sdist = by_kind["wheel"][0], by_kind["sdist"][0]
    errors = wheel_served_errors(wheel.filename, wheel.data, files=files, manifest=manifest)
    errors += sdist_served_errors(sdist.filename, sdist.data, files=files, manifest=manifest,
                                  portal_files=portal_files, left_out=set(left_out))
    if errors:
        raise PackageError([f"build: {error}" for error in errors])


def wheel_served_errors(filename: str, data: bytes, *, files: Mapping[str, str],
                        manifest: Manifest) -> list[str]:
    errors = _wheel_name_errors(filename, manifest)
    try:
        raw = _all_zip_members(data, filename)
    except PackageError as exc:
        return errors + exc.errors
    try:
        dist_info = _dist_info_dir(raw, filename)
    except PackageError as exc:
        return errors + exc.errors
    package, layout = _wheel_package(raw, dist_info, filename)
    errors += layout
    if package and package != manifest.package:
        errors.append(f"{filename}: installs {package}/, but the plugin's package is"
                      f" {manifest.package}/")
    expected = {path: text for path, text in files.items()
                if path.startswith(f"{manifest.package}/")}
    expected[f"{manifest.package}/plugin.toml"] = files.get("plugin.toml", "")
    for path, content in raw.items():
        errors += _served_member_errors(filename, path, content, expected, dist_info)
    errors += [f"{filename}: {path} was reviewed but is missing" for path in sorted(expected)
               if path not in raw]
    return errors + _record_errors(raw, dist_info, filename)


def _wheel_name_errors(filename: str, manifest: Manifest) -> list[str]:
    try:
        dist, version, _build, tags = parse_wheel_filename(filename)
    except InvalidWheelFilename as exc:
        return [f"{filename}: not a wheel file name ({exc})"]
    errors = []
    if dist != canonicalize_name(manifest.name) or version != Version(manifest.version):
        errors.append(f"{filename}: is {dist} {version}, but plugin.toml says"
                      f" {manifest.name} {manifest.version}")
    if not {str(tag) for tag in tags} <= PURE_TAGS:
        errors.append(f"{filename}: is not a pure-Python wheel (py3-none-any)")
    return errors


def _all_zip_members(data: bytes, filename: str) -> dict[str, bytes]:
    """Every member, junk included (read_zip drops editor leftovers; here none may hide)."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        members = archive.infolist()
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise PackageError([f"{filename}: not a valid zip file ({exc})"]) from None
    errors, raw = [], {}
    for info in members:
        problem = check_path(info.filename)
        if problem or info.is_dir() or stat.S_ISLNK(info.external_attr >> 16):
            errors.append(f"{filename}: {info.filename} {problem or 'is not a regular file'}")
        elif info.filename in raw:
            errors.append(f"{filename}: {info.filename} appears twice")
        else:
            raw[info.filename] = archive.read(info)
    if errors:
        raise PackageError(errors)
    return raw


def _served_member_errors(filename: str, path: str, content: bytes,
                          expected: Mapping[str, str], dist_info: str) -> list[str]:
    parts = PurePosixPath(path).parts
    if parts[0] == dist_info:
        if len(parts) != 2 or parts[1] not in WHEEL_DIST_INFO_FILES:
            return [f"{filename}: {path} is not one of the metadata files the portal writes"]
        return []
    if _is_junk(path):
        return [f"{filename}: {path} is a tool leftover, not a reviewed file"]
    if path not in expected:
        return [f"{filename}: {path} was not reviewed"]
    if content != expected[path].encode():
        return [f"{filename}: {path} differs from the reviewed file"]
    return []


def _record_errors(raw: Mapping[str, bytes], dist_info: str, filename: str) -> list[str]:
    """RECORD must list every other file with its sha256 and size, as pip checks on install."""
    record = f"{dist_info}/RECORD"
    if record not in raw:
        return [f"{filename}: {record} is missing"]
    rows = {row[0]: row[1:] for row in csv.reader(raw[record].decode().splitlines()) if row}
    errors = []
    for path, content in raw.items():
        if path == record:
            continue
        digest = base64.urlsafe_b64encode(hashlib.sha256(content).digest()).rstrip(b"=")
        if rows.get(path) != [f"sha256={digest.decode()}", str(len(content))]:
            errors.append(f"{filename}: {path} is not recorded with its hash in RECORD")
    errors += [f"{filename}: RECORD lists {path}, which the wheel does not hold"
               for path in sorted(rows) if path not in raw and path != record]
    return errors


def sdist_served_errors(filename: str, data: bytes, *, files: Mapping[str, str],
                        manifest: Manifest, portal_files: Mapping[str, str],
                        left_out: set[str]) -> list[str]:
    top = f"{canonicalize_name(manifest.name).replace('-', '_')}-{manifest.version}"
    if filename != f"{top}.tar.gz":
        return [f"{filename}: expected {top}.tar.gz for {manifest.name} {manifest.version}"]
    try:
        members = _all_tar_members(data, filename)
    except PackageError as exc:
        return exc.errors
    expected = {path: text for path, text in files.items() if path not in left_out}
    expected.update(portal_files)
    errors = []
    for name, content in members.items():
        inner = name[len(top) + 1:] if name.startswith(f"{top}/") else ""
        problem = check_path(inner) if inner else f"is outside the {top}/ folder"
        if problem:
            errors.append(f"{filename}: {name} {problem}")
        elif _is_junk(inner) or inner not in expected:
            errors.append(f"{filename}: {inner} was not reviewed")
        elif content != expected[inner].encode():
            what = "the one the portal writes" if inner in portal_files else "the reviewed file"
            errors.append(f"{filename}: {inner} differs from {what}")
    return errors + [f"{filename}: {path} is missing" for path in
                     sorted(expected) if f"{top}/{path}" not in members]


def _all_tar_members(data: bytes, filename: str) -> dict[str, bytes]:
    try:
        archive = tarfile.open(fileobj=io.BytesIO(data), mode="r:gz")
        members = archive.getmembers()
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise PackageError([f"{filename}: not a valid .tar.gz ({exc})"]) from None
    errors, result = [], {}
    for info in members:
        if not info.isfile():
            errors.append(f"{filename}: {info.name} is not a regular file")
        elif info.name in result:
            errors.append(f"{filename}: {info.name} appears twice")
        else:
            stream = archive.extractfile(info)
            result[info.name] = stream.read() if stream else b""
    if errors:
        raise PackageError(errors)
    return result


# -- versions, hashes, README --------------------------------------------------------------------


def check_version_order(new: str, existing: Iterable[str], *, name: str) -> None:
    """Versions only go up: equal means "already exists", lower means "going backwards"."""
    versions = [Version(v) for v in existing]
    candidate = Version(new)
    if candidate in versions:
        raise PackageError([f"version {new} of {name} already exists; versions are never"
                            " replaced - raise the version in plugin.toml"])
    newest = max(versions, default=None)
    if newest is not None and candidate < newest:
        raise PackageError([f"version {new} is older than {newest}, the newest version of"
                            f" {name}; versions only go up"])


def source_sha256(files: Mapping[str, str]) -> str:
    digest = hashlib.sha256()
    for path in sorted(files):
        digest.update(path.encode() + b"\0" + files[path].encode() + b"\0")
    return digest.hexdigest()


def render_readme(text: str) -> str:
    html = markdown.markdown(text, extensions=["fenced_code", "tables", "sane_lists"],
                             output_format="html")
    return nh3.clean(html, tags=README_TAGS, link_rel="noopener noreferrer nofollow")
