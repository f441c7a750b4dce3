"""Wheel and sdist, written by the portal itself from exactly the reviewed files.

No build backend runs. An uploaded pyproject.toml can name a backend of its own (even one kept
in the plugin's tests/ folder with `backend-path`) that adds files nobody reviewed, such as a
`.pth` that runs on every interpreter start. So the metadata comes from plugin.toml only, the
archives are written here in Python, and the same files always give the same bytes.

- The wheel holds the package directory (every reviewed file under `<package>/`), plugin.toml
  copied into the package so an installed plugin can read its own permissions, and
  `<name>-<version>.dist-info/` with METADATA, WHEEL and RECORD.
- The sdist holds the reviewed files, PKG-INFO, and a pyproject.toml the portal writes (an
  uploaded pyproject.toml or MANIFEST.in is left out, so a later build from the sdist uses the
  portal's metadata too).
"""

from __future__ import annotations

import base64
import csv
import gzip
import hashlib
import io
import json
import tarfile
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass

from packaging.utils import canonicalize_name

from marketplace.validation import Manifest

DEFAULT_REQUIRES_PYTHON = ">=3.11"  # the interpreter the tests ran on in the sandbox
WHEEL_TAG = "py3-none-any"
GENERATOR = "autocoder-marketplace"
# Build configuration a plugin may carry but the portal never builds with.
IGNORED_INPUTS = ("pyproject.toml", "MANIFEST.in")
# Fixed timestamps: the same reviewed files give byte-identical artifacts (1980-01-01, the
# earliest date a zip can hold).
ZIP_DATE = (1980, 1, 1, 0, 0, 0)
TAR_MTIME = 315532800
SUMMARY_CHARS = 200


class BuildError(Exception):
    """The plugin cannot be packaged; the message says which file and why."""


@dataclass(frozen=True)
class BuiltArtifact:
    kind: str  # "wheel" or "sdist"
    filename: str
    data: bytes

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


def requires_python(manifest: Manifest) -> str:
    return manifest.requires_python or DEFAULT_REQUIRES_PYTHON


def distribution_stem(manifest: Manifest) -> str:
    """`word_count-0.1.0`: the file-name form of name and version (PEP 427, PEP 625)."""
    return f"{canonicalize_name(manifest.name).replace('-', '_')}-{manifest.version}"


def ignored_inputs(files: Mapping[str, str]) -> list[str]:
    """The plugin's own build configuration, which the portal does not use."""
    return [path for path in IGNORED_INPUTS if path in files]


def declared_dependencies(files: Mapping[str, str], manifest: Manifest) -> tuple[str, ...]:
    """What the wheel requires: the runtime libraries plugin.toml lists and those the reviewed
    code imports, pinned as the plugin runtime has them (the versions its tests ran on)."""
    from autocoder.safety.imports import used_libraries

    used = {f"{lib.distribution}=={lib.version}" for lib in used_libraries(dict(files))}
    return tuple(sorted(used | set(manifest.libraries)))


def build_artifacts(files: Mapping[str, str], manifest: Manifest) -> list[BuiltArtifact]:
    """The wheel and the sdist of the reviewed `files` (BuildError if they cannot be packaged)."""
    metadata = metadata_text(manifest, files["README.md"], declared_dependencies(files, manifest))
    return [BuiltArtifact("wheel", f"{distribution_stem(manifest)}-{WHEEL_TAG}.whl",
                          _wheel_bytes(wheel_files(files, manifest), manifest, metadata)),
            BuiltArtifact("sdist", f"{distribution_stem(manifest)}.tar.gz",
                          _sdist_bytes(sdist_files(files, manifest, metadata), manifest))]


# -- what goes in --------------------------------------------------------------------------------


def wheel_files(files: Mapping[str, str], manifest: Manifest) -> dict[str, str]:
    """The installed files: the package directory plus its copy of plugin.toml."""
    package = manifest.package
    inside = {path: text for path, text in files.items() if path.startswith(f"{package}/")}
    copy = f"{package}/plugin.toml"
    if copy in inside and inside[copy] != files["plugin.toml"]:
        raise BuildError(f"{copy}: differs from plugin.toml; the wheel carries plugin.toml"
                         " there, so remove this copy")
    inside[copy] = files["plugin.toml"]
    return dict(sorted(inside.items()))


def sdist_files(files: Mapping[str, str], manifest: Manifest, metadata: str) -> dict[str, str]:
    """The reviewed files without their own build configuration, plus what the portal writes."""
    kept = {path: text for path, text in files.items() if path not in IGNORED_INPUTS}
    kept.update(generated_sdist_files(files, manifest, metadata))
    return dict(sorted(kept.items()))


def generated_sdist_files(files: Mapping[str, str], manifest: Manifest,
                          metadata: str) -> dict[str, str]:
    return {"PKG-INFO": metadata,
            "pyproject.toml": pyproject_for(manifest, files,
                                            declared_dependencies(files, manifest)),
            f"{manifest.package}/plugin.toml": files["plugin.toml"]}


def metadata_text(manifest: Manifest, readme: str, dependencies: tuple[str, ...]) -> str:
    """Core metadata 2.1 (METADATA in the wheel, PKG-INFO in the sdist), README as the body."""
    headers = [("Metadata-Version", "2.1"), ("Name", manifest.name),
               ("Version", manifest.version), ("Summary", _one_line(manifest.summary)),
               ("Requires-Python", requires_python(manifest)),
               *(("Requires-Dist", pin) for pin in dependencies),
               ("Description-Content-Type", "text/markdown")]
    return "".join(f"{key}: {value}\n" for key, value in headers) + "\n" + readme


def _one_line(text: str) -> str:
    return " ".join(text.split())[:SUMMARY_CHARS]


def pyproject_for(manifest: Manifest, files: Mapping[str, str],
                  dependencies: tuple[str, ...] = ()) -> str:
    """The sdist's pyproject.toml: setuptools, told the packages (and subpackages) and that
    plugin.toml is package data, so a build from the sdist gives the same installed files."""
    lines = [
        "[build-system]",
        'requires = ["setuptools>=68"]',
        'build-backend = "setuptools.build_meta"',
        "",
        "[project]",
        f"name = {_toml(manifest.name)}",
        f"version = {_toml(manifest.version)}",
        f"description = {_toml(_one_line(manifest.summary))}",
        'readme = {file = "README.md", content-type = "text/markdown"}',
        f"requires-python = {_toml(requires_python(manifest))}",
        f"dependencies = [{', '.join(_toml(pin) for pin in dependencies)}]",
        "",
        "[tool.setuptools]",
        f"packages = {json.dumps(_packages(files, manifest.package))}",
        "",
        "[tool.setuptools.package-data]",
        '"*" = ["plugin.toml", "*.json", "*.toml", "*.txt", "*.csv", "*.md"]',
    ]
    return "\n".join(lines) + "\n"


def _packages(files: Mapping[str, str], package: str) -> list[str]:
    found = {path.rsplit("/", 1)[0].replace("/", ".") for path in files
             if path.startswith(f"{package}/") and path.endswith("/__init__.py")}
    return sorted(found) or [package]


def _toml(value: str) -> str:
    return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")


# -- the archives --------------------------------------------------------------------------------


def _wheel_bytes(installed: Mapping[str, str], manifest: Manifest, metadata: str) -> bytes:
    dist_info = f"{distribution_stem(manifest)}.dist-info"
    entries = {path: text.encode() for path, text in installed.items()}
    entries[f"{dist_info}/METADATA"] = metadata.encode()
    entries[f"{dist_info}/WHEEL"] = (f"Wheel-Version: 1.0\nGenerator: {GENERATOR}\n"
                                     f"Root-Is-Purelib: true\nTag: {WHEEL_TAG}\n").encode()
    entries[f"{dist_info}/RECORD"] = record_text(entries, f"{dist_info}/RECORD").encode()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path, data in entries.items():
            info = zipfile.ZipInfo(path, date_time=ZIP_DATE)
            info.external_attr = 0o100644 << 16  # a regular file, rw-r--r--
            info.create_system = 3  # Unix, so the mode above is honoured
            archive.writestr(info, data, compress_type=zipfile.ZIP_DEFLATED, compresslevel=9)
    return buffer.getvalue()


def record_text(entries: Mapping[str, bytes], record_path: str) -> str:
    """RECORD: every file with its sha256 (urlsafe base64, no padding) and size."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for path, data in entries.items():
        writer.writerow([path, f"sha256={record_hash(data)}", len(data)])
    writer.writerow([record_path, "", ""])
    return out.getvalue()


def record_hash(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _sdist_bytes(contents: Mapping[str, str], manifest: Manifest) -> bytes:
    top = distribution_stem(manifest)
    raw = io.BytesIO()
    # GzipFile with mtime=0 and no file name: the gzip header holds no build time.
    with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as zipped:
        with tarfile.open(fileobj=zipped, mode="w", format=tarfile.PAX_FORMAT) as archive:
            for path, text in contents.items():
                data = text.encode()
                info = tarfile.TarInfo(f"{top}/{path}")
                info.size, info.mtime, info.mode = len(data), TAR_MTIME, 0o644
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                archive.addfile(info, io.BytesIO(data))
    return raw.getvalue()


def artifact_members(kind: str, data: bytes) -> list[str]:
    """The paths inside a built wheel or sdist, as pip and tar see them."""
    if kind == "wheel":
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            return archive.namelist()
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
        return archive.getnames()
