"""Bounded capture of a job's output and its decoding into text that is safe to store anywhere."""

from __future__ import annotations

from autocoder.runtime.storable import storable_text

# A job printing forever is stopped once it has written this many times its captured budget:
# draining more costs the host CPU for bytes nobody will read.
FLOOD_FACTOR = 64
MIN_FLOOD_BYTES = 8 << 20


class CappedStream:
    """Keeps the first `cap` bytes of a stream and counts the rest."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.total = 0
        self._chunks: list[bytes] = []
        self._kept = 0

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        room = self.cap - self._kept
        if room > 0:
            kept = data[:room]
            self._chunks.append(kept)
            self._kept += len(kept)

    @property
    def truncated(self) -> bool:
        return self.total > self.cap

    @property
    def flooding(self) -> bool:
        return self.total > max(self.cap * FLOOD_FACTOR, MIN_FLOOD_BYTES)

    def text(self) -> str:
        return decode_output(b"".join(self._chunks))


def decode_output(data: bytes) -> str:
    """UTF-8 with invalid bytes replaced, made storable (NUL becomes U+FFFD: PostgreSQL text
    rejects it; autocoder/runtime/storable.py)."""
    return storable_text(data.decode("utf-8", errors="replace"))
