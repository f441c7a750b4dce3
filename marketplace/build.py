"""Wheel and sdist, built from a plugin's files with `python -m build` inside the sandbox.

The sandbox has no network, so the build runs without isolation on the backend the project's
venv already has (setuptools). A plugin without its own pyproject.toml gets a minimal one; the
manifest is copied into the package so an installed plugin can read its own permissions.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import Version

from autocoder.sandbox import Limits, SandboxError, run
from marketplace.validation import Manifest

BUILD_LIMITS = Limits(timeout_s=120, memory_mb=1024, cpu_s=120, pids=64, output_kb=128,
                      workdir_mb=64, collect_kb=16 * 1024)
DEFAULT_REQUIRES_PYTHON = ">=3.11"  # the interpreter the tests ran on in the sandbox
BUILD_COMMAND = ["python", "-m", "build", "--no-isolation", "--wheel", "--sdist",
                 "--outdir", "dist", "."]


class BuildError(Exception):
    """The plugin did not build; the message carries the end of the build log."""


@dataclass(frozen=True)
class BuiltArtifact:
    kind: str  # "wheel" or "sdist"
    filename: str
    data: bytes

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


def pyproject_for(manifest: Manifest, dependencies: tuple[str, ...] = ()) -> str:
    summary = " ".join(manifest.summary.split())[:200]
    lines = [
        "[build-system]",
        'requires = ["setuptools>=68"]',
        'build-backend = "setuptools.build_meta"',
        "",
        "[project]",
        f"name = {_toml(manifest.name)}",
        f"version = {_toml(manifest.version)}",
        f"description = {_toml(summary)}",
        'readme = {file = "README.md", content-type = "text/markdown"}',
        f"requires-python = {_toml(requires_python(manifest))}",
        f"dependencies = [{', '.join(_toml(pin) for pin in dependencies)}]",
        "",
        "[tool.setuptools]",
        f"packages = {_packages_toml(manifest)}",
        "",
        "[tool.setuptools.package-data]",
        '"*" = ["plugin.toml", "*.json", "*.toml", "*.txt", "*.csv", "*.md"]',
    ]
    return "\n".join(lines) + "\n"


def _packages_toml(manifest: Manifest) -> str:
    return json.dumps([manifest.package])


def requires_python(manifest: Manifest) -> str:
    return manifest.requires_python or DEFAULT_REQUIRES_PYTHON


def _toml(value: str) -> str:
    return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")


def build_inputs(files: dict[str, str], manifest: Manifest) -> dict[str, str | bytes]:
    staged: dict[str, str | bytes] = dict(files)
    staged[f"{manifest.package}/plugin.toml"] = files["plugin.toml"]
    if "pyproject.toml" not in files:
        staged["pyproject.toml"] = pyproject_for(manifest, declared_dependencies(files, manifest))
        # Subpackages (a/b/__init__.py) are listed too, since setuptools is told the packages.
        staged["pyproject.toml"] = _with_subpackages(str(staged["pyproject.toml"]), files,
                                                     manifest.package)
    return staged


def declared_dependencies(files: dict[str, str], manifest: Manifest) -> tuple[str, ...]:
    """What the wheel requires: the runtime libraries plugin.toml lists and those the reviewed
    code imports, pinned as the plugin runtime has them (the versions its tests ran on)."""
    from autocoder.safety.imports import used_libraries

    used = {f"{lib.distribution}=={lib.version}" for lib in used_libraries(files)}
    return tuple(sorted(used | set(manifest.libraries)))


def _with_subpackages(pyproject: str, files: dict[str, str], package: str) -> str:
    packages = sorted({path.rsplit("/", 1)[0].replace("/", ".") for path in files
                       if path.startswith(f"{package}/") and path.endswith("/__init__.py")})
    return pyproject.replace(f"packages = {json.dumps([package])}",
                             f"packages = {json.dumps(packages or [package])}")


def build_artifacts(files: dict[str, str], manifest: Manifest) -> list[BuiltArtifact]:
    """Wheel and sdist of the plugin, checked to carry the manifest's name and version."""
    try:
        result = run(build_inputs(files, manifest), BUILD_COMMAND, BUILD_LIMITS,
                     collect=["dist/*"])
    except (SandboxError, ValueError) as exc:
        raise BuildError(f"the sandbox could not run the build: {exc}") from exc
    if result.exit_code != 0:
        raise BuildError(f"python -m build failed ({_why(result)}):\n{_tail(result.stderr)}"
                         f"\n{_tail(result.stdout)}")
    artifacts = [_artifact(path[len("dist/"):], data) for path, data in result.files.items()]
    return _checked(artifacts, manifest, result.files_omitted)


def _why(result: Any) -> str:
    if result.timed_out:
        return "timed out"
    return result.killed_reason or f"exit code {result.exit_code}"


def _tail(text: str, lines: int = 15) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def _artifact(filename: str, data: bytes) -> BuiltArtifact:
    kind = "wheel" if filename.endswith(".whl") else "sdist"
    return BuiltArtifact(kind=kind, filename=filename, data=data)


def _checked(artifacts: list[BuiltArtifact], manifest: Manifest,
             omitted: list[str]) -> list[BuiltArtifact]:
    kinds = {artifact.kind: artifact for artifact in artifacts}
    if set(kinds) != {"wheel", "sdist"} or len(artifacts) != 2:
        names = ", ".join(a.filename for a in artifacts) or "nothing"
        extra = f" (left out: {', '.join(omitted)})" if omitted else ""
        raise BuildError(f"the build produced {names}{extra}; expected one wheel and one sdist")
    name, version = canonicalize_name(manifest.name), Version(manifest.version)
    try:
        wheel = parse_wheel_filename(kinds["wheel"].filename)
        sdist = parse_sdist_filename(kinds["sdist"].filename)
    except (InvalidWheelFilename, InvalidSdistFilename) as exc:
        raise BuildError(f"the build produced an unexpected file name: {exc}") from exc
    for built_name, built_version in ((wheel[0], wheel[1]), sdist):
        if built_name != name or built_version != version:
            raise BuildError(f"the build produced {built_name} {built_version}, but plugin.toml"
                             f" says {manifest.name} {manifest.version}; fix pyproject.toml")
    if not {str(tag) for tag in wheel[3]} <= {"py3-none-any", "py2.py3-none-any"}:
        raise BuildError(f"{kinds['wheel'].filename} is not a pure-Python wheel")
    return [kinds["wheel"], kinds["sdist"]]


def safe_filename(filename: str) -> bool:
    return bool(re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._+-]*", filename))
