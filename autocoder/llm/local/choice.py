"""The site's local model: which GGUF file it is, who chose it and when.

Recorded in MODELS_DIR/chosen.json (what the panel reads where the Model page is not
installed) and stored through the Model page's service. Both an admin's "Use" and a finished
"Download and use" come here, the second from a worker (`work.py`).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from django.contrib.auth.models import User

from autocoder.llm.local.files import models_dir

CHOICE_FILE = "chosen.json"


@dataclass(frozen=True)
class LocalChoice:
    path: Path
    chosen_by: str
    chosen_at: float


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
