"""Installing the local model runtime (llama-cpp-python) on demand, into the portal's own venv.

llama-cpp-python compiles llama.cpp (about 5 minutes on two cores), so `make run` does not
install it; a worker does, when an admin picks a local model. pip's output is streamed into the
progress file line by line; the compiler's "[ 45%]" lines give the percentage. The pip command
is a parameter so that tests can run a harmless stand-in instead of compiling.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import os
import re
import shlex
import subprocess
import sys
import time
import tomllib
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from autocoder.llm.local import progress as states
from autocoder.llm.local.files import LockBusy, exclusive, models_dir
from autocoder.llm.local.progress import Progress, Reporter

PACKAGE = "llama-cpp-python"
NAME = "runtime"  # the progress record's name
# The same flags as LLAMA_CMAKE_ARGS in the Makefile: a portable x86-64 (AVX2) build, since a
# native build picks up CPU features (AMX) that some virtual machines report but do not allow.
CMAKE_ARGS = "-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"
KEEP_LINES = 20
PERCENT = re.compile(r"\[\s*(\d{1,3})%\]")  # make's "[ 45%] Building ..."
STEPS = re.compile(r"^\s*\[(\d+)/(\d+)\]")  # ninja's "[123/456] Building ...", which pip uses
# pip's words when the package index cannot be reached (no internet, a proxy, DNS).
OFFLINE = ("Failed to establish a new connection", "Temporary failure in name resolution",
           "Network is unreachable", "No matching distribution found", "Could not find a version",
           "Max retries exceeded", "Name or service not known")
# Measured on 2 cores: about 5 minutes on a quiet machine, about 23 on a busy one.
CORE_MINUTES = (10, 46)


class RuntimeBusy(Exception):
    """Another worker is installing the runtime right now."""


@dataclass(frozen=True)
class InstallResult:
    ok: bool
    returncode: int
    lines: list[str]


def state_path() -> Path:
    return models_dir() / "llama-cpp-runtime.state.json"


def lock_path() -> Path:
    return models_dir() / "llama-cpp-runtime.lock"


def runtime_version() -> str | None:
    """The installed llama-cpp-python version, or None when the runtime is not installed."""
    importlib.invalidate_caches()  # a worker may have installed it since this process started
    if importlib.util.find_spec("llama_cpp") is None:
        return None
    try:
        return importlib.metadata.version(PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        return "unknown version"


def pinned_version() -> str:
    """The llama-cpp-python version pinned in pyproject.toml's `local` extra."""
    pyproject = Path(settings.BASE_DIR) / "pyproject.toml"
    if pyproject.is_file():
        extra = tomllib.loads(pyproject.read_text())["project"]["optional-dependencies"]["local"]
    else:  # an installed (not checked-out) portal: the same pin from the package metadata
        extra = importlib.metadata.requires("autocoder") or []
    for requirement in extra:
        match = re.match(rf"{PACKAGE}(?:\[[^\]]*\])?==([^\s;]+)", requirement)
        if match:
            return match.group(1)
    raise LookupError(f"no {PACKAGE}==VERSION pin in the local extra of pyproject.toml")


def pip_command() -> list[str]:
    """The real install: this interpreter's pip, verbose so the compiler's progress shows."""
    return [sys.executable, "-m", "pip", "install", "--verbose", "--progress-bar", "off",
            f"{PACKAGE}=={pinned_version()}"]


def install_env() -> dict[str, str]:
    return {**os.environ, "CMAKE_ARGS": CMAKE_ARGS, "PYTHONUNBUFFERED": "1"}


def manual_command() -> str:
    """What an operator types to do the same by hand (shown when the install fails)."""
    return (f'CMAKE_ARGS="{CMAKE_ARGS}" {shlex.quote(sys.executable)} -m pip install '
            f"'{PACKAGE}=={pinned_version()}'")


def runtime_install(*, command: Sequence[str] | None = None, env: dict[str, str] | None = None,
                    on_progress: Callable[[Progress], None] | None = None) -> InstallResult:
    """Run the install (one at a time: RuntimeBusy otherwise), streaming its output lines."""
    try:
        with exclusive(lock_path()):
            return _install_locked(list(command or pip_command()), env or install_env(),
                                   on_progress)
    except LockBusy:
        raise RuntimeBusy("the runtime is already being installed") from None


def runtime_install_queued() -> Progress:
    return states.write(state_path(), Progress(NAME, states.QUEUED,
                                               message="Waiting for a worker."))


def _install_locked(command: list[str], env: dict[str, str],
                    on_progress: Callable[[Progress], None] | None) -> InstallResult:
    lines: deque[str] = deque(maxlen=KEEP_LINES)
    reporter = Reporter(state_path(), Progress(NAME, states.INSTALLING, percent_hint=0.0,
                                               message=shlex.join(command),
                                               started_at=time.time()), on_progress)
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               env=env, text=True, errors="replace", bufsize=1)
    try:
        assert process.stdout is not None
        for line in process.stdout:
            _take_line(reporter, lines, line.rstrip())
        returncode = process.wait()
    finally:
        if process.poll() is None:  # the worker's time limit struck: do not leave pip behind
            process.kill()
            process.wait()
    return _finish(reporter, list(lines), returncode)


def _take_line(reporter: Reporter, lines: deque[str], line: str) -> None:
    if not line.strip():
        return
    lines.append(line[-300:])
    reporter.update(percent_hint=line_percent(line, reporter.current.percent_hint),
                    lines=list(lines))


def line_percent(line: str, before: float | None) -> float | None:
    """How far the build is by this output line: make's "[ 45%]" or ninja's "[12/345]" (the
    percentage of build steps done); else what it was."""
    match = PERCENT.search(line)
    if match:
        return float(match.group(1))
    steps = STEPS.search(line)
    if steps and int(steps.group(2)):
        return round(100.0 * int(steps.group(1)) / int(steps.group(2)), 1)
    return before


def estimate_words(cores: int | None = None) -> str:
    """How long the install takes on this machine, in words, from what it took measured."""
    cores = max(1, cores or os.cpu_count() or 1)
    low, high = (max(1, round(minutes / cores)) for minutes in CORE_MINUTES)
    return (f"about {low} to {high} minutes on this machine's {cores} "
            f"core{'s' if cores != 1 else ''}, the longer while it is busy with other work")


def offline_advice() -> str:
    """What to do where this machine cannot reach the package index."""
    return (f"This machine could not reach the package index to download {PACKAGE}. On a "
            f"computer that can, run: pip download --no-deps --no-binary :all: "
            f"'{PACKAGE}=={pinned_version()}' -d llama; copy the .tar.gz file it saves to this "
            f"machine, then run: CMAKE_ARGS=\"{CMAKE_ARGS}\" {shlex.quote(sys.executable)} -m pip "
            f"install ./{PACKAGE.replace('-', '_')}-{pinned_version()}.tar.gz (the file's name), "
            "and restart the workers.")


def _finish(reporter: Reporter, lines: list[str], returncode: int) -> InstallResult:
    if returncode == 0:
        reporter.update(state=states.DONE, percent_hint=100.0, lines=lines,
                        message=f"llama-cpp-python {runtime_version() or ''} is installed.")
        return InstallResult(True, returncode, lines)
    if any(words in line for line in lines for words in OFFLINE):
        reporter.update(state=states.FAILED, lines=lines, message=offline_advice())
        return InstallResult(False, returncode, lines)
    reporter.update(state=states.FAILED, lines=lines,
                    message=(f"The install stopped with exit code {returncode}. Its last lines "
                             f"are below. To install it by hand: {manual_command()}"))
    return InstallResult(False, returncode, lines)
