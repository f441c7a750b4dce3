"""Zip archives and wheels a team uploads, unpacked into a plugin tree with the same rules."""

from __future__ import annotations

import io
import stat
import zipfile
from collections.abc import Iterable, Mapping
from email.parser import HeaderParser
from pathlib import PurePosixPath
from typing import Any

from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import Version

from marketplace.validation.manifest import PackageError
from marketplace.validation.tree import (
    MAX_ARCHIVE_BYTES,
    MAX_COMPRESSION_RATIO,
    MAX_ENTRIES,
    MAX_FILE_BYTES,
    MAX_TOTAL_BYTES,
    check_path,
    check_plugin_files,
    is_junk,
    text_files,
)

# Tags the wheels we build and accept carry: pure Python, any platform.
PURE_TAGS = frozenset({"py3-none-any", "py2.py3-none-any"})


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
        if is_junk(name):
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
        if info.is_dir() or is_junk(info.filename):
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
    dist_info = dist_info_dir(raw, filename)
    package, errors = wheel_package(raw, dist_info, filename)
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


def dist_info_dir(raw: Mapping[str, bytes], filename: str) -> str:
    dirs = {PurePosixPath(path).parts[0] for path in raw
            if PurePosixPath(path).parts[0].endswith(".dist-info")}
    if len(dirs) != 1 or f"{next(iter(dirs))}/METADATA" not in raw:
        raise PackageError([f"{filename}: no single .dist-info directory with METADATA;"
                            " is it a wheel built by a standard tool?"])
    return dirs.pop()


def wheel_package(raw: Mapping[str, bytes], dist_info: str,
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
