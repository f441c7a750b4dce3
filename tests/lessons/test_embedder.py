"""The embedders: real MiniLM offline (sockets blocked) and the OpenAI-compatible client against a
tiny local http.server fake in a thread (a hosted embeddings API cannot be reached here)."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest
from django.test import override_settings

from autocoder.lessons import embedder as embedder_module
from autocoder.lessons.embedder import (
    DIMENSIONS,
    EmbedderError,
    MiniLMEmbedder,
    OpenAICompatibleEmbedder,
    get_embedder,
)


def test_minilm_loads_and_embeds_with_the_network_blocked(monkeypatch):
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise OSError("network access attempted while offline")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")

    fresh = MiniLMEmbedder()  # a new instance really loads the model here, offline
    vectors = fresh.embed([
        "KeyError: 'Monday' when looking up the weekday in the availability dict",
        "KeyError on weekday names: lower-case the day before the dictionary lookup",
        "Use Decimal for money and round to cents at the end",
        "",
    ])

    assert vectors.shape == (4, DIMENSIONS) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2] + 0.2
    assert os.environ["HF_HUB_OFFLINE"] == "1"


def test_the_default_embedder_is_one_shared_instance_safe_across_threads(embedder):
    results: dict[int, Any] = {}

    def work(i: int) -> None:
        results[i] = (get_embedder(), get_embedder().embed([f"error number {i}"] * 3))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert {id(instance) for instance, _ in results.values()} == {id(embedder)}
    assert all(vectors.shape == (3, DIMENSIONS) for _, vectors in results.values())
    assert embedder.embed([]).shape == (0, DIMENSIONS)
    huge = embedder.embed(["word " * 200_000])
    assert np.linalg.norm(huge[0]) == pytest.approx(1.0, abs=1e-5)


# --- OpenAI-compatible endpoint -------------------------------------------------------------

def fake_vector(text: str, dims: int) -> list[float]:
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
    return list(np.random.default_rng(seed).standard_normal(dims) * 3.0)


class EmbeddingsFake:
    """POST /v1/embeddings like the OpenAI API; answers in reverse order to test sorting."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.status, self.dims = 200, DIMENSIONS
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.requests.append({"path": self.path, "body": body,
                                      "auth": self.headers.get("Authorization")})
                data = [{"object": "embedding", "index": i,
                         "embedding": fake_vector(text, fake.dims)}
                        for i, text in enumerate(body["input"])]
                payload = json.dumps({"object": "list", "data": data[::-1], "model": "x"})
                if fake.status != 200:
                    payload = json.dumps({"error": {"message": "model overloaded"}})
                self.send_response(fake.status)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(payload.encode())

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"


@pytest.fixture
def fake() -> Iterator[EmbeddingsFake]:
    server = EmbeddingsFake()
    server.thread.start()
    yield server
    server.server.shutdown()
    server.server.server_close()


def test_openai_compatible_embedder_batches_sorts_and_normalises(fake):
    client = OpenAICompatibleEmbedder(base_url=fake.base_url, model="nomic-embed",
                                      api_key="sk-test", batch_size=2)
    texts = ["alpha", "beta", "gamma", "delta", "epsilon"]
    vectors = client.embed(texts)

    assert vectors.shape == (5, DIMENSIONS)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    expected = np.array(fake_vector("gamma", DIMENSIONS))
    assert np.allclose(vectors[2], expected / np.linalg.norm(expected), atol=1e-5)
    assert [r["body"]["input"] for r in fake.requests] == [["alpha", "beta"],
                                                           ["gamma", "delta"], ["epsilon"]]
    assert {r["path"] for r in fake.requests} == {"/v1/embeddings"}
    assert {r["auth"] for r in fake.requests} == {"Bearer sk-test"}
    assert {r["body"]["model"] for r in fake.requests} == {"nomic-embed"}


def test_openai_compatible_embedder_reports_failures_clearly(fake):
    client = OpenAICompatibleEmbedder(base_url=fake.base_url, model="m")
    fake.status = 503
    with pytest.raises(EmbedderError, match="answered 503"):
        client.embed(["x"])
    fake.status, fake.dims = 200, 1536
    with pytest.raises(EmbedderError, match="384 dimensions"):
        client.embed(["x"])
    unreachable = OpenAICompatibleEmbedder(base_url="http://127.0.0.1:9/v1", model="m")
    with pytest.raises(EmbedderError, match="unreachable"):
        unreachable.embed(["x"])
    with pytest.raises(EmbedderError, match="EMBEDDINGS_BASE_URL"):
        OpenAICompatibleEmbedder(base_url="", model="m")


def test_settings_choose_the_embedder(fake, monkeypatch):
    monkeypatch.setattr(embedder_module, "_embedders", {})
    with override_settings(EMBEDDER="openai", EMBEDDINGS_BASE_URL=fake.base_url,
                           EMBEDDINGS_MODEL="m", EMBEDDINGS_API_KEY=""):
        chosen = get_embedder()
        assert isinstance(chosen, OpenAICompatibleEmbedder)
        assert get_embedder() is chosen
        assert chosen.embed(["hello"]).shape == (1, DIMENSIONS)
        assert fake.requests[0]["auth"] is None
    with override_settings(EMBEDDER="word2vec"), pytest.raises(EmbedderError, match="unknown"):
        get_embedder()


# -- ONNX Runtime (autocoder/lessons/onnx_minilm.py) ---------------------------------------------

TEXTS = ["Convert my expenses CSV into monthly totals", "x", "",
         "KeyError: 'Monday' when looking up the weekday " * 60]


def test_onnx_runtime_gives_the_vectors_pytorch_gives(settings, tmp_path):
    settings.MODELS_DIR = tmp_path
    onnx = MiniLMEmbedder()
    fast = onnx.embed(TEXTS)  # one padded batch of texts of mixed lengths
    settings.EMBEDDER_RUNTIME = "torch"
    torch = MiniLMEmbedder()
    reference = torch.embed(TEXTS)

    assert (onnx.runtime, torch.runtime) == ("onnx", "torch")
    assert np.min(np.sum(fast * reference, axis=1)) > 0.99999
    assert list((tmp_path / "embeddings").glob("*.onnx")), "the graph is kept for the next start"


def test_a_second_process_uses_the_kept_graph_without_loading_pytorch(settings, tmp_path):
    import subprocess
    import sys

    settings.MODELS_DIR = tmp_path
    MiniLMEmbedder().embed(["export it once"])
    graph = next((tmp_path / "embeddings").glob("*.onnx"))
    exported_at = graph.stat().st_mtime_ns
    script = ("import sys, django; django.setup(); "
              "from autocoder.lessons.embedder import MiniLMEmbedder; "
              "e = MiniLMEmbedder(); v = e.embed(['hello']); "
              "print(e.runtime, v.shape[1], 'torch' in sys.modules)")
    env = {**os.environ, "MODELS_DIR": str(tmp_path),
           "DJANGO_SETTINGS_MODULE": "config.settings"}
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                         timeout=120, check=True).stdout.split()

    assert out == ["onnx", str(DIMENSIONS), "False"]  # a web process no longer needs PyTorch
    assert graph.stat().st_mtime_ns == exported_at


def test_without_onnx_runtime_the_embedder_says_so_and_uses_pytorch(settings, tmp_path,
                                                                    monkeypatch, caplog):
    import sys

    settings.MODELS_DIR = tmp_path
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # as if it were not installed
    fresh = MiniLMEmbedder()

    vectors = fresh.embed(["still embeds"])

    assert fresh.runtime == "torch" and vectors.shape == (1, DIMENSIONS)
    assert "embedding with PyTorch instead of ONNX Runtime" in caplog.text


def test_a_graph_that_disagrees_with_pytorch_is_not_used(settings, tmp_path, monkeypatch):
    from autocoder.lessons import onnx_minilm

    settings.MODELS_DIR = tmp_path
    monkeypatch.setattr(onnx_minilm.OnnxMiniLM, "encode",
                        lambda self, texts: np.ones((len(texts), DIMENSIONS), np.float32) / 19.6)
    fresh = MiniLMEmbedder()

    assert fresh.embed(["a"]).shape == (1, DIMENSIONS) and fresh.runtime == "torch"
    assert not list((tmp_path / "embeddings").glob("*.onnx")), "a wrong graph is not kept"


def test_a_bulk_load_gives_the_vectors_searches_compare_with(embedder, fake, monkeypatch):
    """Loading the reference docs embeds on every core; its vectors must be those of the
    one-thread embedder that searches use, or retrieval would compare unlike with unlike."""
    from autocoder.lessons.embedder import bulk_embed_texts

    texts = ["Parse the first YAML document in a stream", "Encode bytes using Base64", ""]
    assert np.allclose(bulk_embed_texts(texts), get_embedder().embed(texts), atol=1e-5)
    monkeypatch.setattr(embedder_module, "_embedders", {})
    with override_settings(EMBEDDER="openai", EMBEDDINGS_BASE_URL=fake.base_url,
                           EMBEDDINGS_MODEL="m", EMBEDDINGS_API_KEY=""):
        assert bulk_embed_texts(texts).shape == (3, DIMENSIONS)
        assert len(fake.requests) == 1  # another embedder is asked as for any text


def test_a_bulk_embedding_stops_between_slices_when_asked(embedder):
    """The reference load's thread is told to stop when its process exits: it stops at the
    next slice instead of running on inside the model (autocoder/reference/background.py)."""
    from autocoder.lessons.embedder import BULK_SLICE, EmbeddingStopped, bulk_embed_texts

    asked: list[bool] = []

    def stop_after_one_slice() -> bool:
        asked.append(True)
        return len(asked) > 1

    texts = [f"text {n}" for n in range(BULK_SLICE + 1)]
    with pytest.raises(EmbeddingStopped, match=f"stopped after {BULK_SLICE} of {len(texts)}"):
        bulk_embed_texts(texts, should_stop=stop_after_one_slice)
    assert bulk_embed_texts(texts, should_stop=lambda: False).shape == (len(texts), DIMENSIONS)
