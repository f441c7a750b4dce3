"""Keeping the web processes' shares of kept-alive connections even.

The kernel hands each new connection to one of the web processes at random (SO_REUSEPORT), and
a browser or an HTTP client keeps its connection for many requests: twenty connections often
split 12/8. A process runs one page at a time, so the busier one sets everybody's waiting time
while the other idles (measured with bench_load: 12/8 was the usual split, and its p95 the
busier process's). Each process counts the connections it answered lately and writes the count
into a small file all of them share; a process holding more than an even share answers one of
its connections with "Connection: close", and the client's next connection is handed out anew.
A process counts in the even share only while it serves: its slot is empty (never written)
until it is ready, and the supervisor empties it again when the process dies. Without that, a
replacement still loading Django looked like a process with no connections, the others let
theirs go towards it, and the connections waited in its socket's queue (20 ended 18/1/1).
See docs/operating.md, "Processes and load".
"""

from __future__ import annotations

import logging
import mmap
import os
import struct
import time
from pathlib import Path

ENVIRONMENT = "AUTOCODER_WEB_SHARES"  # "<file>:<this process's index>:<processes>"
# (written at, on the monotonic clock the processes share; connections); written at 0: not
# serving (starting, or gone)
SLOT = struct.Struct("<dq")
# A connection silent this long no longer counts; a slot not written for twice as long belongs
# to a process that is gone or idle.
IDLE_S = 5.0
PRUNE_EVERY_S = 1.0
# A process lets go of at most one connection this often: the client reconnects within
# milliseconds, so the next decision sees where it landed (without it, a process whose peer
# was idle would let go of nearly all its connections before any came back).
SHED_EVERY_S = 0.1

Client = tuple[str, int]
logger = logging.getLogger(__name__)


def shares_file_create(path: Path, processes: int) -> None:
    """The shared file, every slot empty (the supervisor makes it before starting the web)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(bytes(SLOT.size * processes))


def environment_value(path: Path, index: int, processes: int) -> str:
    return f"{path}:{index}:{processes}"


def slot_clear(path: Path, index: int) -> None:
    """Process `index` no longer serves (the supervisor saw it exit): the others stop counting
    it in the even share until its replacement is ready."""
    try:
        with path.open("r+b") as shared:
            shared.seek(index * SLOT.size)
            shared.write(bytes(SLOT.size))
    except OSError as error:  # the file went with var/: nothing left to even out
        logger.warning("could not clear web process %d's share in %s: %s", index, path, error)


class ConnectionShares:
    """This process's view: its own connections, and every process's count in the file."""

    def __init__(self, path: Path, index: int, processes: int) -> None:
        if not 0 <= index < processes:
            raise ValueError(f"process {index} of {processes}")
        self.index, self.processes = index, processes
        descriptor = os.open(path, os.O_RDWR)
        try:
            self._shared = mmap.mmap(descriptor, SLOT.size * processes)
        finally:
            os.close(descriptor)
        self._clients: dict[Client, float] = {}
        self._pruned_at = 0.0
        self._shed_at = 0.0

    @classmethod
    def from_environment(cls) -> ConnectionShares | None:
        """The shares the supervisor set up, or None (one server process: nothing to even)."""
        value = os.environ.get(ENVIRONMENT, "")
        if not value:
            return None
        try:
            path, index, processes = value.rsplit(":", 2)
            return cls(Path(path), int(index), int(processes)) if int(processes) > 1 else None
        except (OSError, ValueError) as error:  # serving matters more than evening out
            logger.warning("connections are not evened out (%s=%r: %s)", ENVIRONMENT, value,
                           error)
            return None

    def serving(self) -> None:
        """This process is ready to answer: it counts in the even share from now on."""
        SLOT.pack_into(self._shared, self.index * SLOT.size, time.monotonic(), 0)

    def should_close(self, client: Client, *, kept_alive: bool = True) -> bool:
        """Count `client`'s connection as answered now; True when this process holds more than
        an even share, so this connection is to be closed after its answer. A connection the
        client closes after this answer (`kept_alive` False: "Connection: close", HTTP/1.0)
        holds no share: counted for the next seconds, a burst of such requests would make
        the process that answered them shed the kept-alive connections it really holds."""
        now = time.monotonic()
        if kept_alive:
            self._clients[client] = now
        else:
            self._clients.pop(client, None)
        if now - self._pruned_at >= PRUNE_EVERY_S:
            self._prune(now)
        mine = len(self._clients)
        others, serving = self._others(now)
        even_share = -(-(mine + others) // serving)
        close = kept_alive and mine > even_share and now - self._shed_at >= SHED_EVERY_S
        if close:
            del self._clients[client]
            mine -= 1
            self._shed_at = now
        SLOT.pack_into(self._shared, self.index * SLOT.size, now, mine)
        return close

    def _prune(self, now: float) -> None:
        self._pruned_at = now
        for client, seen in list(self._clients.items()):
            if now - seen > IDLE_S:
                del self._clients[client]

    def _others(self, now: float) -> tuple[int, int]:
        """The other processes' recent connections, and how many processes serve (this one
        included): a quiet one serves with none, a starting or dead one does not count."""
        total, serving = 0, 1
        for index in range(self.processes):
            if index != self.index:
                written_at, connections = SLOT.unpack_from(self._shared, index * SLOT.size)
                if written_at:
                    serving += 1
                    if now - written_at <= 2 * IDLE_S:
                        total += connections
        return total, serving
