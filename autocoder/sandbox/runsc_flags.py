"""What a gVisor (runsc) runtime registered with the Docker engine needs for the sandbox
(docs/sandbox.md, "gVisor"), and, when a flag is missing, which one and how to add it.

The engine reports each runtime's `runtimeArgs` (`docker info`, the SDK's `client.info()`);
`/etc/docker/daemon.json` holds what it reads on start and on SIGHUP. `doctor`, `/healthz` and
the runtime probe (autocoder/sandbox/image.py, `docker_problem`) and the tests' choice of
backends ask `registration_problem`. Standard library only: `.ci/docker-engine` runs this file
with the system's python3 before any venv exists:

    docker info --format '{{json .Runtimes}}' | \
        python3 autocoder/sandbox/runsc_flags.py [NAME [DAEMON_JSON]]

prints nothing and exits 0 when runtime NAME (default runsc) has every flag; else prints what
is wrong and the fix (DAEMON_JSON, default /etc/docker/daemon.json: whether reloading the
engine is all it takes) and exits 1.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

DAEMON_JSON = Path("/etc/docker/daemon.json")
RELOAD = "reload dockerd (`kill -HUP $(pidof dockerd)`)"
SEE = 'see docs/sandbox.md, "gVisor"'
# flag -> (the value to add, the values that will do, why the sandbox needs it)
REQUIRED: dict[str, tuple[str, tuple[str, ...], str]] = {
    "--network": ("none", ("none",), "Debian's runsc refuses containers without a network"
                  " (the sandbox's `--network none`) unless it has it"),
    "--host-uds": ("open", ("open", "all"), "a plugin's api.http reaches the portal through a"
                   " Unix socket bound into its container; without it every call answers"
                   " \"the portal's channel for api.http cannot be reached ([Errno 1]"
                   " Operation not permitted)\""),
}


def runtime_flags(args: Sequence[object]) -> dict[str, str]:
    """`runtimeArgs` as flag -> value: `--flag=value`, `-flag=value`, `--flag value` (Go's
    flag package takes all three; a flag given twice counts as its last value)."""
    found: dict[str, str] = {}
    words = [str(arg) for arg in args]
    index = 0
    while index < len(words):
        word = words[index]
        index += 1
        if not word.startswith("-"):
            continue
        name, equals, value = ("--" + word.lstrip("-")).partition("=")
        if not equals and index < len(words) and not words[index].startswith("-"):
            value = words[index]
            index += 1
        found[name] = value if equals or value else "true"
    return found


def missing_flags(args: Sequence[object]) -> list[str]:
    """The flags the sandbox needs that `args` lacks (or gives another value), as `--f=v`."""
    flags = runtime_flags(args)
    return [f"{flag}={value}" for flag, (value, accepted, _) in REQUIRED.items()
            if flags.get(flag) not in accepted]


def is_gvisor(name: str, entry: Mapping[str, Any] | None) -> bool:
    """Runtime `name` runs gVisor: it is called runsc or its program is."""
    path = str((entry or {}).get("path") or "")
    return name == "runsc" or Path(path).name == "runsc"


def registration_problem(name: str, runtimes: Mapping[str, Any],
                         daemon_json: Mapping[str, Any] | None = None) -> tuple[str, str] | None:
    """(what is wrong, how to fix it) with runtime `name` as the engine reports its runtimes
    (`runtimes`: name -> {"path", "runtimeArgs"}), or None when the sandbox can use it.
    `daemon_json`: the engine's configuration file as read here, to tell "not reloaded yet"
    apart from "not configured"."""
    entry = runtimes.get(name)
    configured = ((daemon_json or {}).get("runtimes") or {}).get(name)
    configured = configured if isinstance(configured, Mapping) else None
    reload_only = (f"{DAEMON_JSON} already has it, but the engine has not read it since:"
                   f" {RELOAD}; {SEE}")
    if not isinstance(entry, Mapping):
        if configured is not None and not missing_flags(configured.get("runtimeArgs") or []):
            return f"the Docker engine has no runtime {name!r}", reload_only
        return (f"the Docker engine has no runtime {name!r}",
                f"register it in {DAEMON_JSON}: {_entry_text(name, {}, list(_all_flags()))},"
                f" then {RELOAD}; {SEE}")
    if not is_gvisor(name, entry):
        return None
    missing = missing_flags(entry.get("runtimeArgs") or [])
    if not missing:
        return None
    why = "; ".join(f"{flag}: {REQUIRED[flag.partition('=')[0]][2]}" for flag in missing)
    problem = (f"gVisor's runtime {name!r} is registered without {' and '.join(missing)}"
               f" ({why})")
    if configured is not None and not missing_flags(configured.get("runtimeArgs") or []):
        return problem, reload_only
    return problem, (f"add {', '.join(json.dumps(flag) for flag in missing)} to the"
                     f" \"runtimeArgs\" of {json.dumps(name)} in {DAEMON_JSON}, so that it"
                     f" reads {_entry_text(name, entry, missing)}, then {RELOAD}; {SEE}")


def _all_flags() -> list[str]:
    return [f"{flag}={value}" for flag, (value, _, _) in REQUIRED.items()]


def _entry_text(name: str, entry: Mapping[str, Any], missing: list[str]) -> str:
    """The runtime's entry with the missing flags added (a wrong value of one replaced)."""
    replaced = {flag.partition("=")[0] for flag in missing}
    kept = [str(arg) for arg in entry.get("runtimeArgs") or []
            if ("--" + str(arg).lstrip("-")).partition("=")[0] not in replaced]
    fixed = {"path": entry.get("path") or "/usr/bin/runsc", "runtimeArgs": [*kept, *missing]}
    return f'"{name}": {json.dumps(fixed)}'


def daemon_json_read(path: Path = DAEMON_JSON) -> dict[str, object] | None:
    """The engine's configuration file, or None when it is absent or unreadable here (the
    portal may run on another machine or in a container)."""
    try:
        found = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) else None


def main(argv: list[str]) -> int:
    name = argv[1] if len(argv) > 1 else "runsc"
    daemon_json = Path(argv[2]) if len(argv) > 2 else DAEMON_JSON
    try:
        runtimes = json.loads(sys.stdin.read() or "{}")
    except ValueError:
        print("runsc_flags: the engine's runtimes are not JSON (docker info --format"
              " '{{json .Runtimes}}')", file=sys.stderr)
        return 1
    found = registration_problem(name, runtimes if isinstance(runtimes, dict) else {},
                                 daemon_json_read(daemon_json))
    if found is None:
        return 0
    print(f"{found[0]}.\nTo fix it: {found[1]}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
