"""Writes for the local model: ask a worker to download or install, record the chosen model.

Keyword-only, typed, named <entity>_<action>. The requests write the "queued" progress and
send the actor after the transaction commits; the *_run functions are what the actors call.
"""

from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path

from django.contrib.auth.models import User
from django.db import transaction

from autocoder.llm.local import progress as states
from autocoder.llm.local import runtime
from autocoder.llm.local.catalogue import CatalogueModel
from autocoder.llm.local.download import DownloadBusy, DownloadError, model_download
from autocoder.llm.local.files import ModelFiles, is_locked, models_dir
from autocoder.llm.local.progress import Progress

logger = logging.getLogger(__name__)

CHOICE_FILE = "chosen.json"


@dataclass(frozen=True)
class LocalChoice:
    path: Path
    chosen_by: str
    chosen_at: float


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
    from autocoder.tasks import local_model_download

    transaction.on_commit(lambda: local_model_download.send(
        model.url, model.file_name, model.sha256, model.size_bytes, user.pk))
    return queued


def local_model_download_run(*, url: str, file_name: str, sha256: str = "",
                             size: int | None = None, use_by: int | None = None) -> None:
    """The actor's work: download, then use the model if an admin asked for that.

    A second delivery while the first still downloads finds the lock taken and does nothing;
    one after it finds the verified file and does not download again. Errors that trying
    again cannot fix are already in the progress file for the page: they end here.
    """
    try:
        result = model_download(url=url, file_name=file_name, sha256=sha256, size=size)
    except DownloadBusy:
        logger.info("%s is already being downloaded by another worker", file_name)
        return
    except DownloadError as error:
        if error.retryable:
            raise
        logger.warning("download of %s failed: %s", file_name, error)
        return
    user = User.objects.filter(pk=use_by).first() if use_by is not None else None
    if user is not None:  # an admin clicked "Download and use" (and still exists)
        local_model_choose(path=result.path, user=user)


def local_runtime_install_request(*, user: User) -> Progress | None:
    """Queue the llama-cpp-python install; None when it is installed already."""
    if runtime.runtime_version() is not None:
        return None
    current = states.read(runtime.state_path())
    if current is not None and is_locked(runtime.lock_path()):
        return current
    queued = runtime.runtime_install_queued()
    from autocoder.tasks import local_runtime_install

    transaction.on_commit(local_runtime_install.send)
    return queued


def local_runtime_install_run() -> None:
    """The actor's work: install unless installed, or unless another worker is installing."""
    if runtime.runtime_version() is not None:
        states.write(runtime.state_path(), Progress(runtime.NAME, states.DONE, percent_hint=100))
        return
    try:
        runtime.runtime_install()
    except runtime.RuntimeBusy:
        logger.info("the local model runtime is already being installed by another worker")


def local_model_choose(*, path: Path, user: User) -> LocalChoice:
    """Make the GGUF file at `path` the site's model (provider llamacpp, every role).

    Stored through the Model page's service (`site_model_local_select`: audit log, held runs
    released) and recorded in MODELS_DIR/chosen.json, which is what the panel reads where the
    Model page is not installed.
    """
    choice = LocalChoice(path=path.resolve(), chosen_by=user.get_username(),
                         chosen_at=time.time())
    target = models_dir() / CHOICE_FILE
    temporary = target.with_name(f".{CHOICE_FILE}.{os.getpid()}.tmp")
    temporary.write_text(json.dumps({"provider": "llamacpp", "model": str(choice.path),
                                     "chosen_by": choice.chosen_by,
                                     "chosen_at": choice.chosen_at}))
    os.replace(temporary, target)
    from autocoder.llm import services as llm_services

    site_select = getattr(llm_services, "site_model_local_select", None)
    if site_select is not None:
        site_select(actor=user, model_path=str(choice.path))
    return choice
