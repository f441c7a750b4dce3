"""What a worker does for the local model: the bodies of the actors in autocoder/llm/tasks.py.

`services.py` queues the work (it imports the actors); the actors call these functions, so
nothing here imports the services or the actors back.
"""

from __future__ import annotations

import logging

from django.contrib.auth.models import User

from autocoder.llm.local import progress as states
from autocoder.llm.local import runtime
from autocoder.llm.local.choice import local_model_choose
from autocoder.llm.local.download import DownloadBusy, DownloadError, model_download
from autocoder.llm.local.progress import Progress

logger = logging.getLogger(__name__)


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


def local_runtime_install_run() -> None:
    """The actor's work: install unless installed, or unless another worker is installing."""
    if runtime.runtime_version() is not None:
        states.write(runtime.state_path(), Progress(runtime.NAME, states.DONE, percent_hint=100))
        return
    try:
        runtime.runtime_install()
    except runtime.RuntimeBusy:
        logger.info("the local model runtime is already being installed by another worker")
