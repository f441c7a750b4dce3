"""What the marketplace serves, checked against what was reviewed."""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import stat
import tarfile
import zipfile
from collections.abc import Iterable, Mapping
from pathlib import PurePosixPath
from typing import Protocol

from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import Version

from marketplace.validation.archives import PURE_TAGS, dist_info_dir, wheel_package
from marketplace.validation.manifest import Manifest, PackageError
from marketplace.validation.tree import check_path, is_junk

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
        dist_info = dist_info_dir(raw, filename)
    except PackageError as exc:
        return errors + exc.errors
    package, layout = wheel_package(raw, dist_info, filename)
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
    if is_junk(path):
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
        elif is_junk(inner) or inner not in expected:
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

