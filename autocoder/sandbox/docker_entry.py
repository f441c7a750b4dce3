"""Entry program of a Docker sandbox run (stdlib only; its source is passed with `python -c`).

The container's filesystem is read-only and its workdir a tmpfs that `docker cp` cannot
reach, so the job's files travel in argv (a gzip tar in base64 chunks) and the produced files
come back in one framed line on stdout. The job's own output is copied through, capped, so
the log driver never holds more than the caps. argv: [config_b64, chunk, chunk, ...].

A prepared container (docker_standby.py) is started before its job: argv is [PREPARED], the
entry says READY on stdout and waits on stdin for two lines, config_b64 and the payload,
then says TOOK and runs the job as above.
"""

from __future__ import annotations

import base64
import io
import json
import os
import resource
import selectors
import signal
import stat
import subprocess
import sys
import tarfile
from fnmatch import fnmatchcase


def _match(parts: tuple[str, ...], pats: tuple[str, ...]) -> bool:
    if not pats:
        return not parts
    if pats[0] == "**":
        return any(_match(parts[i:], pats[1:]) for i in range(len(parts) + 1))
    return bool(parts) and fnmatchcase(parts[0], pats[0]) and _match(parts[1:], pats[1:])


def _collect(root: str, patterns: list[str], budget: int) -> tuple[str, list[str]]:
    buffer, omitted, left = io.BytesIO(), [], budget
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for current, dirs, names in os.walk(root):  # os.walk does not follow symlinks
            rel_dir = os.path.relpath(current, root)
            if rel_dir.count(os.sep) >= 64:
                dirs[:] = []
            for name in sorted(names) + sorted(d for d in dirs if os.path.islink(
                    os.path.join(current, d))):
                rel = os.path.normpath(os.path.join(rel_dir, name))
                if not any(_match(tuple(rel.split("/")), tuple(p.split("/"))) for p in patterns):
                    continue
                path = os.path.join(current, name)
                info = os.lstat(path)
                if not stat.S_ISREG(info.st_mode):
                    omitted.append(f"{rel} (not a regular file)")
                elif info.st_size > left:
                    omitted.append(f"{rel} (over the {budget // 1024} KB collect budget)")
                else:
                    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
                    with os.fdopen(fd, "rb") as handle:
                        data = handle.read(left + 1)
                    if len(data) > left:
                        omitted.append(f"{rel} (over the {budget // 1024} KB collect budget)")
                        continue
                    entry = tarfile.TarInfo(rel)
                    entry.size = len(data)
                    tar.addfile(entry, io.BytesIO(data))
                    left -= len(data)
    return base64.b64encode(buffer.getvalue()).decode(), omitted


def _cpu_used() -> float:
    """The most processor seconds one process of the job has used (RLIMIT_CPU's measure: per
    process), over every process of the container but its init and this program."""
    ticks = 0
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in (1, os.getpid()):
            continue
        try:
            with open(f"/proc/{name}/stat") as stream:
                fields = stream.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        ticks = max(ticks, int(fields[11]) + int(fields[12]))
    return ticks / os.sysconf("SC_CLK_TCK")


def _over_cpu(cpu_limit: float | None) -> bool:
    """gVisor does not enforce RLIMIT_CPU: under runsc the entry watches the job's processes
    itself and ends every one of them when one has used its processor time."""
    if not cpu_limit or _cpu_used() <= cpu_limit:
        return False
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) not in (1, os.getpid()):
            try:
                os.kill(int(name), signal.SIGKILL)
            except OSError:
                pass
    return True


def _pump(proc: subprocess.Popen[bytes], cap: int,
          cpu_limit: float | None) -> tuple[dict[int, int], str | None]:
    totals = {1: 0, 2: 0}
    sinks = {1: sys.stdout.buffer, 2: sys.stderr.buffer}
    selector = selectors.DefaultSelector()
    assert proc.stdout is not None and proc.stderr is not None  # noqa: S101  (piped by main)
    selector.register(proc.stdout, selectors.EVENT_READ, 1)
    selector.register(proc.stderr, selectors.EVENT_READ, 2)
    while selector.get_map():
        if _over_cpu(cpu_limit):
            return totals, "cpu_limit"
        for key, _ in selector.select(timeout=0.25 if cpu_limit else None):
            data = os.read(key.fd, 65536)
            if not data:
                selector.unregister(key.fileobj)
                continue
            room = cap - totals[key.data]
            if room > 0:
                sinks[key.data].write(data[:room])
                sinks[key.data].flush()
            totals[key.data] += len(data)
            if totals[key.data] > max(cap * 64, 8 << 20):
                proc.kill()
                return totals, "output_limit"
    return totals, None


def _extract(blob: bytes, workdir: str) -> None:
    """The job's files: regular files under the workdir only (by hand: Debian bookworm's
    Python 3.11.2 predates tarfile's extraction filters)."""
    with tarfile.open(fileobj=io.BytesIO(blob), mode="r:gz") as tar:
        for member in tar.getmembers():
            target = os.path.normpath(os.path.join(workdir, member.name))
            handle = tar.extractfile(member) if member.isfile() else None
            if handle is None or not target.startswith(workdir + os.sep):
                continue
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "wb") as out:
                out.write(handle.read())


PREPARED = "--prepared"
READY = b"@@autocoder-ready@@\n"
TOOK = b"@@autocoder-took@@\n"


def _job() -> tuple[str, str]:
    """The config and the payload (base64): from argv, or from stdin for a prepared
    container, which says READY before waiting for them and TOOK once it has them."""
    if sys.argv[1:] != [PREPARED]:
        return sys.argv[1], "".join(sys.argv[2:])
    sys.stdout.buffer.write(READY)
    sys.stdout.flush()
    config, payload = sys.stdin.buffer.readline(), sys.stdin.buffer.readline()
    if not payload.endswith(b"\n"):
        raise SystemExit(3)  # the host went away before handing a whole job over
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)  # the job cannot reach the host's end
    sys.stdout.buffer.write(TOOK)
    sys.stdout.flush()
    return config.decode().strip(), payload.decode().strip()


def main() -> int:
    encoded, payload = _job()
    config = json.loads(base64.b64decode(encoded))
    workdir = config["workdir"]
    _extract(base64.b64decode(payload), workdir)
    address_space, nproc = config.get("address_space"), config.get("nproc")

    def bound() -> None:  # one process's address space, as bwrap's launcher sets it: an
        # allocation past it is a MemoryError the job can report; the cgroup bounds the total.
        # nproc: the job's processes under gVisor (see RUNSC_HOST_THREADS in docker_backend)
        if address_space:
            resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
        if nproc:
            resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))

    proc = subprocess.Popen(config["argv"], cwd=workdir, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=bound)  # noqa: PLW1509 (the entry has no threads)
    cpu_limit = config.get("cpu_watch")
    totals, stop = _pump(proc, config["output_cap"], cpu_limit)
    while stop is None and cpu_limit:  # the job closed its output but may still be busy
        try:
            proc.wait(timeout=0.25)
            break
        except subprocess.TimeoutExpired:
            stop = "cpu_limit" if _over_cpu(cpu_limit) else None
    code = proc.wait()
    files, omitted = _collect(workdir, config["collect"], config["collect_budget"]) \
        if config["collect"] else ("", [])
    exit_code = code if code >= 0 else 128 - code
    frame = {"exit_code": exit_code, "stop": stop,
             "stdout_total": totals[1], "stderr_total": totals[2],
             "files": files, "omitted": omitted}
    sys.stdout.buffer.write(b"\n" + config["marker"].encode()
                            + base64.b64encode(json.dumps(frame).encode()) + b"\n")
    sys.stdout.flush()
    return exit_code


if __name__ == "__main__":
    sys.exit(main())
