"""Build the plugin runtime: `python -m autocoder.runtime.build [--dir DIR] [--force]`.

Runs without Django (the Makefile and the Dockerfile call it before anything else is set up).
The environment is built beside its final place and renamed into it, so a half-built runtime is
never used and two builds at once do not mix. It has no pip of its own: the portal's pip
installs into it (`pip --python`), and plugins have no way to install anything.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

from autocoder.runtime import (
    REQUIREMENTS,
    STAMP_NAME,
    requirements_digest,
    runtime_dir,
    runtime_problem,
    runtime_python,
)

REFERENCE_NAME = "reference.json"
_EXTRACTOR = Path(__file__).with_name("reference_extract.py")


def build(target: Path, *, force: bool = False, quiet: bool = True) -> bool:
    """Build the runtime at `target` unless an up-to-date one is there. True when built."""
    if not force and runtime_problem(target) is None:
        if not _reference_current(target):  # built before this extractor: extract again
            write_reference(target)
        return False
    staging = target.with_name(f"{target.name}.building-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    try:
        venv.EnvBuilder(with_pip=False, symlinks=True, clear=True).create(staging)
        _install(staging, quiet=quiet)
        write_reference(staging)
        (staging / STAMP_NAME).write_text(json.dumps({
            "digest": requirements_digest(), "python": sys.version.split()[0]}))
        _replace(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return True


def write_reference(directory: Path) -> Path:
    """The API reference of what plugins may import, read by the runtime's own Python into
    REFERENCE_NAME (docs/engine.md, "Reference docs")."""
    from autocoder.runtime import LIBRARIES
    from autocoder.safety.reviewed import NOT_REVIEWED, REVIEWED_MODULES, REVIEWED_NAMES

    skip = {"__future__", "posixpath", "keyword", "errno"}  # os.path covers posixpath
    what = {
        "libraries": [{"distribution": lib.distribution, "version": lib.version,
                       "modules": list(lib.modules)} for lib in LIBRARIES
                      if lib.modules != ("tzdata",)],  # data only: zoneinfo is its API
        "stdlib": {"modules": sorted((REVIEWED_MODULES - skip) | {"collections.abc"}),
                   "names": {k: sorted(v) for k, v in REVIEWED_NAMES.items()},
                   "exclude": sorted(NOT_REVIEWED)},
    }
    what["extractor"] = _extractor_digest()
    out = directory / REFERENCE_NAME
    subprocess.run([str(runtime_python(directory)), "-I", str(_EXTRACTOR), str(out)],
                   input=json.dumps(what), text=True, check=True, capture_output=True)
    return out


def _extractor_digest() -> str:
    return hashlib.sha256(_EXTRACTOR.read_bytes()).hexdigest()


def _reference_current(directory: Path) -> bool:
    try:
        with (directory / REFERENCE_NAME).open(encoding="utf-8") as file:
            head = file.read(200)  # "extractor" is the first key: no need to parse 1 MB
    except OSError:
        return False
    return f'"extractor":"{_extractor_digest()}"' in head


def _install(staging: Path, *, quiet: bool) -> None:
    # The lock pins every dependency: --no-deps installs exactly it and nothing else.
    command = [sys.executable, "-m", "pip", "--python", str(runtime_python(staging)),
               "install", "--no-deps", "--disable-pip-version-check",
               "-r", str(REQUIREMENTS)]
    if quiet:
        command.append("-q")
    subprocess.run(command, check=True)


def _replace(staging: Path, target: Path) -> None:
    old = target.with_name(f"{target.name}.old-{os.getpid()}")
    if target.exists():
        target.rename(old)
    staging.rename(target)
    shutil.rmtree(old, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=None, help="where (default: %(default)s)")
    parser.add_argument("--force", action="store_true", help="rebuild even when up to date")
    args = parser.parse_args(argv)
    target = (args.dir or runtime_dir()).resolve()
    try:
        built = build(target, force=args.force)
    except subprocess.CalledProcessError as error:
        print(f"the plugin runtime could not be built at {target}: pip failed "
              f"(exit {error.returncode}); see its output above", file=sys.stderr)
        return 2
    print(f"plugin runtime {'built' if built else 'up to date'} at {target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
