"""A warm mypy cache for the types stage: the standard library's (and the runtime libraries')
types checked once per runtime and sandbox backend, then copied into every quality job, so
mypy reads them instead of checking them again (about 2 s of every candidate's 2.5 s).

It is made in the sandbox from a module we write (no plugin's code), so a plugin can never
change what later plugins are checked against; a plugin's own job writes only to its copy.
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
from dataclasses import replace
from pathlib import Path

from autocoder.runtime import LIBRARIES, requirements_digest, runtime_dir
from autocoder.sandbox.runner import default_backend, run
from autocoder.sandbox.types import DEFAULT_LIMITS

logger = logging.getLogger(__name__)

CONFIG_PATH = ".autocoder/mypy.ini"
CACHE_DIR = ".autocoder/mypy-cache"
# Ours, the same for the seed and every job (the options are part of the cache's key); a
# plugin's own mypy.ini or pyproject.toml is not read.
CONFIG = "[mypy]\nignore_missing_imports = True\nshow_error_codes = True\n"
ARGS = (f"--config-file={CONFIG_PATH}", "--sqlite-cache", f"--cache-dir={CACHE_DIR}",
        "--no-error-summary", "--hide-error-context", "--no-color-output",
        "--show-column-numbers")
_STDLIB = ("json re csv datetime collections typing math statistics itertools functools "
           "dataclasses pathlib io decimal zoneinfo textwrap string urllib.parse hashlib base64 "
           "random enum fractions calendar operator copy uuid difflib unicodedata html "
           "xml.etree.ElementTree tomllib heapq bisect abc contextlib types").split()
SEED = "".join(f"import {name}  # noqa: F401\n" for name in
               (*_STDLIB, *(lib.modules[0] for lib in LIBRARIES)))
_memory: dict[str, dict[str, bytes]] = {}
_lock = threading.Lock()


def _place(backend: str) -> Path:
    return runtime_dir().with_name(runtime_dir().name + ".mypy-cache") / \
        f"{backend}-{requirements_digest()[:12]}"


def cache_files(backend: str | None = None) -> dict[str, str | bytes]:
    """The warm cache as job files under CACHE_DIR (empty when it cannot be made: mypy then
    builds its cache in the job, slower but the same findings)."""
    chosen = backend or default_backend()
    with _lock:
        if chosen not in _memory:
            _memory[chosen] = _load(chosen) or _seed(chosen)
        return {f"{CACHE_DIR}/{name}": data for name, data in _memory[chosen].items()}


def _load(backend: str) -> dict[str, bytes]:
    place = _place(backend)
    try:
        return {str(path.relative_to(place)): path.read_bytes()
                for path in sorted(place.rglob("*")) if path.is_file()}
    except OSError:
        return {}


def _seed(backend: str) -> dict[str, bytes]:
    limits = replace(DEFAULT_LIMITS, timeout_s=90, cpu_s=90, collect_kb=16 * 1024,
                     memory_mb=max(DEFAULT_LIMITS.memory_mb, 768))
    try:
        result = run({"seed.py": SEED, CONFIG_PATH: CONFIG},
                     ["python", "-m", "mypy", *ARGS, "seed.py"], limits, backend=backend,
                     collect=[f"{CACHE_DIR}/**"])
    except Exception as exc:  # noqa: BLE001 (a missing cache only costs time)
        logger.warning("the mypy cache for the quality pipeline could not be made: %s", exc)
        return {}
    prefix = CACHE_DIR + "/"
    files = {name[len(prefix):]: data for name, data in result.files.items()
             if name.startswith(prefix)}
    if result.exit_code != 0 or not files:
        logger.warning("the mypy cache seed failed (exit %s): %s", result.exit_code,
                       (result.stdout + result.stderr)[-500:])
        return {}
    _store(backend, files)
    return files


def _store(backend: str, files: dict[str, bytes]) -> None:
    place = _place(backend)
    staging = place.with_name(f"{place.name}.{os.getpid()}-{threading.get_ident()}")
    try:
        for name, data in files.items():
            target = staging / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        if not place.exists():
            staging.rename(place)
    except OSError as exc:  # kept in memory only
        logger.info("the mypy cache was not saved at %s: %s", place, exc)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def clear() -> None:
    """Forget the cache held in memory (the one on disk stays)."""
    with _lock:
        _memory.clear()

