"""all-MiniLM-L6-v2 through ONNX Runtime: the vectors sentence-transformers computes, for a third
of the CPU.

Every catalogue search embeds its query in the web process, and every run embeds its lessons
query in a worker. PyTorch spends most of such a short input's time dispatching operators one
by one (measured: 12.4 ms of CPU per query on one thread); ONNX Runtime runs the same graph in
4.0 ms. The graph is exported once per machine from the bundled model (a few seconds, then a
file of about 90 MB under MODELS_DIR) and only used when its vectors match PyTorch's on probe
texts. Tokenising, mean pooling and normalising follow the model's sentence-transformers
configuration (mean of the token vectors, L2 norm, at most 256 word pieces).
See docs/lessons.md, "Configuration".
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.metadata
import json
import logging
import os
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

logger = logging.getLogger(__name__)

OPSET = 17
INPUTS = ("input_ids", "attention_mask", "token_type_ids")
# The export is used only if every probe's vector is this close to PyTorch's (cosine).
MIN_AGREEMENT = 0.99999
PROBES = (
    "Convert my expenses CSV into monthly totals",
    "ÉCRIRE un rapport: météo, 2026-11-24; ünïcödé & émojis ✓",
    "x",
    "a lesson about timezones " * 80,  # beyond 256 word pieces: truncated like the original
)


class OnnxUnavailable(RuntimeError):
    """ONNX Runtime cannot serve this model here (not installed, export failed, disagreement)."""


def graph_path(models_dir: Path, model_path: Path) -> Path:
    """Where the exported graph of the model at `model_path` lives: named after the model's
    weights and the exporter, so a new model or torch version exports again (read without
    importing torch, which a process that finds the graph never needs)."""
    weights = model_path / "model.safetensors"
    stamp = (f"{weights.stat().st_size}-{weights.stat().st_mtime_ns}-"
             f"{importlib.metadata.version('torch')}-{OPSET}")
    digest = hashlib.sha256(stamp.encode()).hexdigest()[:16]
    return models_dir / "embeddings" / f"all-MiniLM-L6-v2-{digest}.onnx"


class OnnxMiniLM:
    """Encodes texts like SentenceTransformer.encode(normalize_embeddings=True)."""

    def __init__(self, model_path: Path, graph: Path, threads: int) -> None:
        try:
            import onnxruntime
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise OnnxUnavailable(f"onnxruntime is not installed ({exc})") from exc
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        self._session = onnxruntime.InferenceSession(
            str(graph), options, providers=["CPUExecutionProvider"])
        self._tokenizer = Tokenizer.from_file(str(model_path / "tokenizer.json"))
        self._tokenizer.enable_truncation(max_length=_max_seq_length(model_path))
        self._tokenizer.enable_padding()

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        encodings = self._tokenizer.encode_batch(list(texts))
        feeds = {
            "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
            "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
        }
        tokens = self._session.run(None, feeds)[0]
        mask = feeds["attention_mask"][..., None].astype(np.float32)
        pooled = (tokens * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)


def _max_seq_length(model_path: Path) -> int:
    config = json.loads((model_path / "sentence_bert_config.json").read_text())
    return int(config.get("max_seq_length", 256))


def load(model_path: Path, models_dir: Path, threads: int) -> OnnxMiniLM:
    """The ONNX encoder, exporting and checking the graph first if this machine has none."""
    try:
        import onnxruntime  # noqa: F401
    except ImportError as exc:
        raise OnnxUnavailable(f"onnxruntime is not installed ({exc})") from exc
    graph = graph_path(models_dir, model_path)
    if not graph.exists():
        graph.parent.mkdir(parents=True, exist_ok=True)
        # Several processes start at once: one exports, the others wait and use its file.
        with open(graph.with_suffix(".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not graph.exists():
                _export_checked(model_path, graph, threads)
    return OnnxMiniLM(model_path, graph, threads)


def _export_checked(model_path: Path, graph: Path, threads: int) -> None:
    from sentence_transformers import SentenceTransformer

    reference = SentenceTransformer(str(model_path), device="cpu", local_files_only=True)
    partial = graph.with_name(f"{graph.stem}.{os.getpid()}.partial")
    try:
        _export(reference, partial)
        candidate = OnnxMiniLM(model_path, partial, threads)
        expected = reference.encode(list(PROBES), normalize_embeddings=True,
                                    convert_to_numpy=True, show_progress_bar=False)
        agreement = float(np.min(np.sum(candidate.encode(PROBES) * expected, axis=1)))
        if agreement < MIN_AGREEMENT:
            raise OnnxUnavailable(f"the exported graph disagrees with PyTorch (cosine "
                                  f"{agreement:.6f} < {MIN_AGREEMENT})")
        os.replace(partial, graph)
        logger.info("exported the embedding model for ONNX Runtime to %s", graph)
    finally:
        partial.unlink(missing_ok=True)


def _export(reference: Any, target: Path) -> None:
    import torch

    transformer = reference[0].auto_model.eval()

    class _LastHiddenState(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.transformer = transformer

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.transformer(input_ids=input_ids, attention_mask=attention_mask,
                                    token_type_ids=token_type_ids).last_hidden_state

    sample = reference.tokenizer(["a sample"], return_tensors="pt")
    dynamic = {name: {0: "batch", 1: "tokens"} for name in (*INPUTS, "last_hidden_state")}
    try:
        with torch.inference_mode(), warnings.catch_warnings():
            # The exporter's notes on operators it translated; the probes check the result.
            warnings.simplefilter("ignore")
            torch.onnx.export(_LastHiddenState(), tuple(sample[name] for name in INPUTS),
                              str(target), input_names=list(INPUTS),
                              output_names=["last_hidden_state"], dynamic_axes=dynamic,
                              opset_version=OPSET, dynamo=False)
    except Exception as exc:  # the exporter raises many types; PyTorch stays the fallback
        raise OnnxUnavailable(f"could not export the embedding model: {exc}") from exc
