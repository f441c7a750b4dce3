"""Supervised server processes: what `up` and `serve` start, restart and stop.

A child that exits is started again within seconds (sooner than a person notices; later after
each crash at start-up), alone: the others keep serving. Each child has a process group of its
own, so a Ctrl-C in the terminal reaches the supervisor only, which stops the children in
order, and killing the group also takes a dead child's orphans (a sandbox, say).

The web server is several ASGI processes on one listening socket, which the supervisor opens
and the processes inherit (daphne `--fd`): the kernel hands each new connection to one of
them, a dead one is replaced while the rest answer, and the port never closes.
See docs/operating.md, "Processes and load".
"""

from __future__ import annotations

import functools
import ipaddress
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings

from autocoder import metrics
from autocoder.connection_shares import ENVIRONMENT as SHARES_ENVIRONMENT
from autocoder.connection_shares import environment_value as shares_environment
from autocoder.connection_shares import shares_file_create
from autocoder.connection_shares import slot_clear as shares_slot_clear

# A child that lived shorter than this crashed at start-up: wait longer before each retry.
QUICK_EXIT_S = 10.0
MAX_RESTART_DELAY_S = 30.0
LISTEN_BACKLOG = 1024


class Stop(Exception):
    """Ctrl-C or SIGTERM reached the supervisor."""


@dataclass
class Child:
    """One supervised server process, in a process group of its own."""

    name: str
    command: list[str]
    env: dict[str, str] | None = None
    pass_fds: tuple[int, ...] = ()
    on_exit: Callable[[], None] | None = None  # told as soon as the process is seen gone
    process: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    quick_exits: int = 0
    restart_at: float | None = None
    restarts: int = 0

    def start(self) -> None:
        env = {**os.environ, **self.env} if self.env else None
        self.process = subprocess.Popen(self.command, cwd=settings.BASE_DIR, env=env,
                                        start_new_session=True, pass_fds=self.pass_fds)
        self.started_at, self.restart_at = time.monotonic(), None

    def exited(self) -> int | None:
        return None if self.process is None else self.process.poll()

    def kill_group(self) -> None:
        if self.process is not None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def schedule_restart(self) -> float:
        """After an exit: kill what is left of its group and pick when to start again."""
        self.kill_group()
        lived = time.monotonic() - self.started_at
        self.quick_exits = self.quick_exits + 1 if lived < QUICK_EXIT_S else 0
        delay = min(MAX_RESTART_DELAY_S, 0.5 * 2 ** self.quick_exits) if self.quick_exits else 0
        self.restart_at = time.monotonic() + delay
        return delay

    def terminate(self) -> None:
        """SIGTERM to the child itself (dramatiq passes it on to its worker process once, so
        the worker stops cleanly instead of being killed by a second signal)."""
        if self.process is not None and self.process.poll() is None:
            try:
                self.process.terminate()
            except ProcessLookupError:
                pass

    def wait_or_kill(self, deadline: float) -> None:
        if self.process is None:
            return
        try:
            self.process.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
        self.kill_group()  # leftovers (a sandbox, a worker that ignored SIGTERM)
        self.process.wait()


def restart_exited(children: list[Child], say: Callable[[str], None]) -> None:
    """Start again each child that exited (after its back-off), the others untouched."""
    now = time.monotonic()
    for child in children:
        if child.restart_at is not None:
            if now >= child.restart_at:
                child.start()
                child.restarts += 1
                pid = child.process.pid if child.process else "?"
                say(f"{child.name} started again (pid {pid})")
            continue
        code = child.exited()
        if code is not None:
            if child.on_exit is not None:
                child.on_exit()
            if child.process is not None:
                metrics.process_gone(settings.METRICS_DIR, child.process.pid)
            delay = child.schedule_restart()
            say(f"{child.name} exited (code {code}); starting it again"
                + (f" in {delay:.0f}s" if delay else ""))


def stop_all(children: list[Child], budget_s: float) -> None:
    for child in children:
        child.terminate()
    deadline = time.monotonic() + budget_s
    for child in children:
        child.wait_or_kill(deadline)


def catch_stop_signals() -> None:
    """Ctrl-C and SIGTERM both stop the supervisor. SIGINT is set explicitly: started in the
    background (`nohup manage.py up &`) it arrives ignored, and Python then keeps it so."""
    def stop(signum: int, frame: object) -> None:
        raise Stop(signal.Signals(signum).name)

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)


def ignore_stop_signals() -> None:
    """A second Ctrl-C must not cut the ordered stop short and leave children running."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


# --- the web server ---------------------------------------------------------------------

def web_process_count() -> int:
    """WEB_PROCESSES, or one per core plus one: Django runs a process's sync views one at a
    time, and while one process waits for the database another can use the core."""
    return settings.WEB_PROCESSES or (os.cpu_count() or 1) + 1


def listening_sockets(host: str, port: int, count: int) -> list[socket.socket]:
    """The web server's port, opened `count` times with SO_REUSEPORT: one socket per ASGI
    process, among which the kernel spreads new connections evenly (with one shared socket,
    whichever process wakes first takes most of them). The supervisor keeps them open, so
    connections that reach a dead process's socket wait for its replacement, never refused."""
    if _is_ipv6(host):  # daphne adopts inherited sockets as IPv4 only
        raise OSError(f"cannot listen on {host}: give an IPv4 address (0.0.0.0 for every "
                      "interface) and put a proxy in front for IPv6")
    sockets: list[socket.socket] = []
    try:
        for _ in range(count):
            sockets.append(_listen(host, port))
    except OSError as error:
        for sock in sockets:
            sock.close()
        raise OSError(f"cannot listen on {host}:{port}: {error.strerror} "
                      "(is another portal running? choose another with --port)") from error
    return sockets


def _listen(host: str, port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((host, port))
        sock.listen(LISTEN_BACKLOG)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def _is_ipv6(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).version == 6
    except ValueError:
        return False


def web_children(sockets: list[socket.socket]) -> list[Child]:
    """One daphne process serving the portal on each of `sockets`, sharing the count of their
    connections (autocoder/connection_shares.py)."""
    port = sockets[0].getsockname()[1] if sockets else 0
    shares = settings.VAR_DIR / "run" / f"web-shares-{port}"  # written anew at each start
    shares_file_create(shares, len(sockets))
    # Verbosity 0: daphne's own line per request cost about 3 ms of CPU per page (measured
    # with bench_load); the HTTP bridge writes the access log instead (WEB_ACCESS_LOG).
    return [Child(f"web server {n + 1}",
                  [sys.executable, "-m", "daphne", "-v", "0", "--fd", str(sock.fileno()),
                   "config.asgi:application"], pass_fds=(sock.fileno(),),
                  env={SHARES_ENVIRONMENT: shares_environment(shares, n, len(sockets))},
                  on_exit=functools.partial(shares_slot_clear, shares, n))
            for n, sock in enumerate(sockets)]
