"""Dramatiq actors of the llm app: thin, they take arguments and call a service.

Dramatiq names an actor after its function and sends it to the "default" queue, so these kept
their names and queue when they moved here from autocoder/tasks.py: messages already queued
still reach them. django_dramatiq loads this module (DRAMATIQ_AUTODISCOVER_MODULES).
"""

from __future__ import annotations

import dramatiq


# Downloading a local model: one message per download (it resumes from the `.part` file, so a
# retry or a redelivery after a killed worker continues where the bytes stopped). Errors that
# trying again cannot fix (offline, checksum) end in the service; only dropped connections and
# server errors come back here to be retried with backoff.
@dramatiq.actor(max_retries=5, min_backoff=10_000, max_backoff=300_000,
                time_limit=6 * 60 * 60 * 1000)
def local_model_download(url: str, file_name: str, sha256: str = "", size: int | None = None,
                         use_by: int | None = None) -> None:
    """Download the model file at `url` into MODELS_DIR; use it afterwards if `use_by` asked."""
    from autocoder.llm.local.work import local_model_download_run

    local_model_download_run(url=url, file_name=file_name, sha256=sha256, size=size,
                             use_by=use_by)


# Installing llama-cpp-python compiles llama.cpp (~5 minutes on two cores); a failed compile
# is shown to the admin with pip's last lines rather than retried.
@dramatiq.actor(max_retries=0, time_limit=60 * 60 * 1000)
def local_runtime_install() -> None:
    """Install the local model runtime into the portal's venv unless it is there."""
    from autocoder.llm.local.work import local_runtime_install_run

    local_runtime_install_run()
