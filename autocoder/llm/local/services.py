"""Writes for the local model: ask a worker to download a model or install the runtime.

Keyword-only, typed, named <entity>_<action>. The requests write the "queued" progress and
send the actor after the transaction commits; what the actors do is in `work.py`, and the
chosen model is recorded by `choice.py`.
"""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import transaction

from autocoder.llm.local import progress as states
from autocoder.llm.local import runtime
from autocoder.llm.local.catalogue import CatalogueModel
from autocoder.llm.local.files import ModelFiles, is_locked
from autocoder.llm.local.progress import Progress


def local_model_download_request(*, model: CatalogueModel, user: User) -> Progress:
    """Queue the download of `model` (and the runtime install when it is missing).

    When the download finishes, the model becomes the site's model ("Download and use").
    A download already under way is left alone, so a double click queues nothing twice.
    """
    files = ModelFiles.for_name(model.file_name)
    current = states.read(files.state)
    if current is not None and is_locked(files.lock):
        return current
    queued = states.write(files.state, Progress(
        model.file_name, states.QUEUED, url=model.url, bytes_done=files.part_size(),
        bytes_total=model.size_bytes, use_when_done_by=user.pk, message="Waiting for a worker."))
    if runtime.runtime_version() is None:
        local_runtime_install_request(user=user)
    from autocoder.llm.tasks import local_model_download

    transaction.on_commit(lambda: local_model_download.send(
        model.url, model.file_name, model.sha256, model.size_bytes, user.pk))
    return queued


def local_runtime_install_request(*, user: User) -> Progress | None:
    """Queue the llama-cpp-python install; None when it is installed already."""
    if runtime.runtime_version() is not None:
        return None
    current = states.read(runtime.state_path())
    if current is not None and is_locked(runtime.lock_path()):
        return current
    queued = runtime.runtime_install_queued()
    from autocoder.llm.tasks import local_runtime_install

    transaction.on_commit(local_runtime_install.send)
    return queued
