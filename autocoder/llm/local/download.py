"""Download a model file: resumable, checksum-verified, one process at a time per file.

The bytes go to NAME.part; after an interruption (a dropped connection, a killed worker) the
next attempt asks the server for the rest with an HTTP Range request, so the `.part` size is
the only bookkeeping needed. The finished file is checked against its expected size and
SHA-256 and only then renamed to its final name (an atomic rename: a model path either does not
exist or holds the complete, verified file). A file that fails the check is removed.

Where the expected SHA-256 comes from, first match wins: the caller (`--sha256`, the catalogue);
the checksum Hugging Face publishes for LFS files in the `X-Linked-Etag` header; otherwise the
SHA-256 computed on this first complete download is recorded beside the file (NAME.sha256) and
the result says it was not verified against a published value.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import httpx

from autocoder.llm.local import progress as states
from autocoder.llm.local.files import LockBusy, ModelFiles, exclusive, file_name_from_url
from autocoder.llm.local.progress import Progress, Reporter

logger = logging.getLogger(__name__)

CHUNK_BYTES = 1 << 20
SHA256_HEX = re.compile(r"^[0-9a-f]{64}$")
# Hugging Face answers a /resolve/ URL with the LFS file's SHA-256 and size in these headers
# (huggingface_hub reads the same ones), on the redirect as well as on the file itself.
LINKED_ETAG, LINKED_SIZE = "x-linked-etag", "x-linked-size"

SOURCE_GIVEN, SOURCE_PUBLISHED, SOURCE_RECORDED = (
    "given", "published by the server", "recorded on this first download (no published value)")


class DownloadError(Exception):
    """A download that did not produce a verified file; `retryable`: trying later can help."""

    retryable = False


class DownloadOffline(DownloadError):
    pass


class DownloadInterrupted(DownloadError):
    retryable = True


class DownloadRefused(DownloadError):
    pass


class ChecksumMismatch(DownloadError):
    pass


class DownloadBusy(DownloadError):
    """Another process is downloading this file right now (not an error for a second worker)."""


@dataclass(frozen=True)
class Expected:
    sha256: str = ""
    size: int | None = None
    source: str = ""


@dataclass(frozen=True)
class DownloadResult:
    path: Path
    sha256: str
    size: int
    checksum_source: str
    resumed_from: int = 0
    bytes_fetched: int = 0
    already_present: bool = False

    def as_dict(self) -> dict[str, object]:
        return {"state": states.DONE, "path": str(self.path), "file_name": self.path.name,
                "sha256": self.sha256, "size": self.size,
                "checksum_source": self.checksum_source, "resumed_from": self.resumed_from,
                "bytes_fetched": self.bytes_fetched, "already_present": self.already_present}


ProgressCallback = Callable[[Progress], None]


def model_download(*, url: str, file_name: str = "", sha256: str = "", size: int | None = None,
                   directory: Path | None = None, attempts: int = 3, timeout_s: float = 30.0,
                   on_progress: ProgressCallback | None = None,
                   use_when_done_by: int | None = None) -> DownloadResult:
    """Download `url` into MODELS_DIR (or `directory`) as `file_name`; see the module doc.

    A dropped connection is resumed up to `attempts` times here; after that DownloadInterrupted
    (retryable) leaves the `.part` file for the next call. DownloadBusy when another process is
    downloading the same file.
    """
    files = ModelFiles.for_name(file_name or file_name_from_url(url), directory)
    expected = _expected(sha256, size)
    try:
        with exclusive(files.lock):
            return _download_locked(files, url, expected, attempts=attempts,
                                    timeout_s=timeout_s, on_progress=on_progress,
                                    use_when_done_by=use_when_done_by)
    except LockBusy:
        raise DownloadBusy(f"{files.name} is already being downloaded by another process") \
            from None


def model_import(*, source: Path, file_name: str = "", sha256: str = "", size: int | None = None,
                 directory: Path | None = None,
                 on_progress: ProgressCallback | None = None) -> DownloadResult:
    """Take a file downloaded elsewhere (`model_pull --from FILE`) through the same checks."""
    if not source.is_file():
        raise DownloadRefused(f"{source} is not a file")
    files = ModelFiles.for_name(file_name or source.name, directory)
    expected = _expected(sha256, size)
    try:
        with exclusive(files.lock):
            reporter = Reporter(files.state, Progress(files.name, states.DOWNLOADING,
                                                      url=source.resolve().as_uri()), on_progress)
            if source.resolve() == files.target.resolve():
                return _verify_in_place(files, expected, reporter)
            _copy(source, files.part, reporter)
            return _verify_and_place(files, expected, reporter, resumed_from=0)
    except LockBusy:
        raise DownloadBusy(f"{files.name} is being downloaded by another process") from None


def _expected(sha256: str, size: int | None) -> Expected:
    sha256 = sha256.strip().lower()
    if sha256 and not SHA256_HEX.match(sha256):
        raise ValueError(f"{sha256!r} is not a SHA-256 (64 hexadecimal characters)")
    return Expected(sha256=sha256, size=size, source=SOURCE_GIVEN if sha256 else "")


def _download_locked(files: ModelFiles, url: str, expected: Expected, *, attempts: int,
                     timeout_s: float, on_progress: ProgressCallback | None,
                     use_when_done_by: int | None) -> DownloadResult:
    present = _already_present(files, expected)
    if present is not None:
        Reporter(files.state, Progress(files.name, states.DONE, url=url, bytes_done=present.size,
                                       bytes_total=present.size, sha256=present.sha256,
                                       checksum_source=present.checksum_source), on_progress)
        return present
    expected = _remembered(files, url, expected)
    resumed_from = files.part_size()
    reporter = Reporter(files.state, Progress(
        files.name, states.DOWNLOADING, url=url, bytes_done=resumed_from,
        bytes_total=expected.size, sha256=expected.sha256, checksum_source=expected.source,
        use_when_done_by=use_when_done_by), on_progress)
    for attempt in range(1, attempts + 1):
        try:
            expected = _fetch(files, url, expected, reporter, timeout_s=timeout_s)
            break
        except DownloadInterrupted as error:
            if attempt == attempts:
                reporter.update(state=states.FAILED, message=_interrupted_text(files, error))
                raise
            reporter.update(message=f"The connection dropped ({error}); resuming.", force=True)
            time.sleep(min(2.0 ** attempt, 10.0))
        except DownloadError as error:
            reporter.update(state=states.FAILED, message=str(error))
            raise
    return _verify_and_place(files, expected, reporter, resumed_from=resumed_from)


def _remembered(files: ModelFiles, url: str, expected: Expected) -> Expected:
    """A checksum the server published on an earlier attempt of this same download."""
    earlier = states.read(files.state)
    if expected.sha256 or earlier is None or earlier.url != url or not earlier.sha256:
        return expected
    return Expected(sha256=earlier.sha256, size=expected.size or earlier.bytes_total,
                    source=earlier.checksum_source or SOURCE_PUBLISHED)


def _fetch(files: ModelFiles, url: str, expected: Expected, reporter: Reporter, *,
           timeout_s: float) -> Expected:
    """Append the rest of the file to the `.part` file; the expected values, maybe learnt."""
    offset = files.part_size()
    if expected.size is not None and offset > expected.size:
        files.part.unlink()  # longer than the real file: it cannot be a prefix of it
        offset = 0
    # identity: a compressed answer would make byte ranges refer to other bytes.
    headers = {"Accept-Encoding": "identity"}
    if offset:
        headers["Range"] = f"bytes={offset}-"
    timeout = httpx.Timeout(timeout_s, connect=min(timeout_s, 15.0))
    try:
        with httpx.stream("GET", url, headers=headers, follow_redirects=True,
                          timeout=timeout) as response:
            return _receive(files, url, response, offset, expected, reporter)
    except (httpx.ConnectError, httpx.ConnectTimeout, httpx.UnsupportedProtocol) as error:
        raise DownloadOffline(_offline_text(files, url, offset)) from error
    except (httpx.ReadError, httpx.ReadTimeout, httpx.RemoteProtocolError,
            httpx.WriteError, httpx.PoolTimeout) as error:
        raise DownloadInterrupted(f"{type(error).__name__}: {error}") from error


def _receive(files: ModelFiles, url: str, response: httpx.Response, offset: int,
             expected: Expected, reporter: Reporter) -> Expected:
    if response.status_code == 416 and offset:
        return _nothing_left(files, response, offset, expected)
    _check_status(response, url)
    if offset and response.status_code == 200:
        offset = 0  # the server ignored the range and sends the whole file: start over
    elif offset and _range_start(response) != offset:
        files.part.unlink()
        raise DownloadInterrupted("the server sent another part of the file than asked for")
    expected = _learn(expected, response, offset)
    total = _total(response, offset) or expected.size
    if expected.size is not None and total is not None and total != expected.size:
        raise ChecksumMismatch(f"the server offers {total} bytes for {files.name}, but "
                               f"{expected.size} are expected: it is not the expected file")
    reporter.update(bytes_done=offset, bytes_total=total, sha256=expected.sha256,
                    checksum_source=expected.source, message="")
    done = offset
    with files.part.open("ab" if offset else "wb") as out:
        for chunk in response.iter_raw():  # as it arrives: a drop then loses nothing
            out.write(chunk)
            # Flushed at once: the .part file's size is always what was received (where a
            # resume starts, what the page shows).
            out.flush()
            done += len(chunk)
            reporter.bytes(done, total)
        os.fsync(out.fileno())
    reporter.bytes(done, total)
    if total is not None and done < total:
        raise DownloadInterrupted(f"the server stopped after {done} of {total} bytes")
    return expected


def _nothing_left(files: ModelFiles, response: httpx.Response, offset: int,
                  expected: Expected) -> Expected:
    """HTTP 416 to "the rest from `offset`": complete if the file is exactly that long."""
    match = re.match(r"bytes \*/(\d+)", response.headers.get("content-range", ""))
    if match and int(match.group(1)) != offset:
        files.part.unlink()  # not a prefix of the server's file
        raise DownloadInterrupted("the partial download did not fit the server's file")
    return expected


def _check_status(response: httpx.Response, url: str) -> None:
    status = response.status_code
    if status in (200, 206):
        return
    host = urlsplit(url).hostname or url
    if status in (401, 403):
        raise DownloadRefused(f"{host} refused the download (HTTP {status}): the file needs a "
                              "login or accepting its licence. Download it in a browser and "
                              "run `python manage.py model_pull --from FILE`.")
    if status == 404:
        raise DownloadRefused(f"{host} has no such file (HTTP 404): {url}")
    if status == 429 or status >= 500:
        raise DownloadInterrupted(f"{host} answered HTTP {status}; trying again later")
    raise DownloadRefused(f"{host} answered HTTP {status} for {url}")


def _range_start(response: httpx.Response) -> int | None:
    match = re.match(r"bytes (\d+)-\d+/(\d+|\*)", response.headers.get("content-range", ""))
    return int(match.group(1)) if match else None


def _total(response: httpx.Response, offset: int) -> int | None:
    match = re.match(r"bytes \d+-\d+/(\d+)", response.headers.get("content-range", ""))
    if match:
        return int(match.group(1))
    length = response.headers.get("content-length")
    return offset + int(length) if length and length.isdigit() else None


def _learn(expected: Expected, response: httpx.Response, offset: int) -> Expected:
    """Add the SHA-256 and size the server publishes (Hugging Face), unless already known."""
    sha256, size = "", None
    for answer in (*response.history, response):
        etag = answer.headers.get(LINKED_ETAG, "").strip().strip('"').lower()
        sha256 = sha256 or (etag if SHA256_HEX.match(etag) else "")
        linked_size = answer.headers.get(LINKED_SIZE, "")
        size = size or (int(linked_size) if linked_size.isdigit() else None)
    if expected.sha256 or not sha256:
        return Expected(expected.sha256, expected.size or size, expected.source)
    return Expected(sha256, expected.size or size, SOURCE_PUBLISHED)


def _verify_and_place(files: ModelFiles, expected: Expected, reporter: Reporter, *,
                      resumed_from: int) -> DownloadResult:
    reporter.update(state=states.VERIFYING, message="Checking the file's checksum.")
    size = files.part_size()
    digest = _sha256(files.part)
    problem = _mismatch(files, expected, size, digest)
    if problem:
        files.part.unlink(missing_ok=True)
        reporter.update(state=states.FAILED, message=problem, bytes_done=0)
        raise ChecksumMismatch(problem)
    os.replace(files.part, files.target)
    files.checksum.write_text(f"{digest}  {files.name}\n")
    source = expected.source or SOURCE_RECORDED
    reporter.update(state=states.DONE, bytes_done=size, bytes_total=size, sha256=digest,
                    checksum_source=source, message="")
    return DownloadResult(files.target, digest, size, source, resumed_from=resumed_from,
                          bytes_fetched=size - resumed_from)


def _mismatch(files: ModelFiles, expected: Expected, size: int, digest: str) -> str:
    if expected.size is not None and size != expected.size:
        return (f"{files.name} has {size} bytes instead of {expected.size}: the damaged "
                "download was removed; try again.")
    if expected.sha256 and digest != expected.sha256:
        return (f"{files.name} does not match its checksum (SHA-256 {digest}, expected "
                f"{expected.sha256}, {expected.source}): the damaged download was removed; "
                "try again.")
    return ""


def _verify_in_place(files: ModelFiles, expected: Expected,
                     reporter: Reporter) -> DownloadResult:
    """`--from` the model's own path: check it, and never delete what the admin put there."""
    reporter.update(state=states.VERIFYING, message="Checking the file's checksum.")
    present = _already_present(files, expected)
    if present is None:
        problem = (f"{files.target} does not match the expected size or checksum; it was left "
                   "where it is.")
        reporter.update(state=states.FAILED, message=problem)
        raise ChecksumMismatch(problem)
    reporter.update(state=states.DONE, bytes_done=present.size, bytes_total=present.size,
                    sha256=present.sha256, checksum_source=present.checksum_source, message="")
    return present


def _already_present(files: ModelFiles, expected: Expected) -> DownloadResult | None:
    """The verified file when it is already there (a second delivery, a repeated pull)."""
    if not files.target.is_file():
        return None
    recorded = files.checksum.read_text().split()[0] if files.checksum.is_file() else ""
    size = files.target.stat().st_size
    if expected.size is not None and size != expected.size:
        return None
    digest = recorded if recorded and (not expected.sha256 or recorded == expected.sha256) \
        else _sha256(files.target)
    if expected.sha256 and digest != expected.sha256:
        return None  # another file under this name: download the expected one over it
    if not recorded:
        files.checksum.write_text(f"{digest}  {files.name}\n")
    source = expected.source or SOURCE_RECORDED
    return DownloadResult(files.target, digest, size, source, already_present=True)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while block := stream.read(CHUNK_BYTES):
            digest.update(block)
    return digest.hexdigest()


def _copy(source: Path, part: Path, reporter: Reporter) -> None:
    total = source.stat().st_size
    done = 0
    with source.open("rb") as src, part.open("wb") as out:
        while block := src.read(CHUNK_BYTES * 8):
            out.write(block)
            done += len(block)
            reporter.bytes(done, total)
        out.flush()
        os.fsync(out.fileno())
    shutil.copystat(source, part)


def _offline_text(files: ModelFiles, url: str, offset: int) -> str:
    host = urlsplit(url).hostname or url
    kept = (f" The {offset} bytes already downloaded are kept; the download resumes from "
            "there when this machine is online again." if offset else "")
    return (f"This machine cannot reach {host}: download the file elsewhere ({url}) and put "
            f"it at {files.target}, or run `python manage.py model_pull --from FILE`.{kept}")


def _interrupted_text(files: ModelFiles, error: DownloadError) -> str:
    return (f"The download of {files.name} was interrupted ({error}). What was downloaded "
            f"({files.part_size()} bytes) is kept, and the next attempt resumes from there.")
