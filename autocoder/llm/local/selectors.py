"""Reads for the local model part of the Model page: catalogue rows, runtime, the choice."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

from autocoder.llm.local import progress as states
from autocoder.llm.local import runtime
from autocoder.llm.local.catalogue import CatalogueModel, catalogue_list
from autocoder.llm.local.choice import CHOICE_FILE, LocalChoice
from autocoder.llm.local.files import ModelFiles, is_locked, models_dir
from autocoder.llm.local.progress import Progress

# Shown when a worker died mid-way: the next attempt resumes (downloads) or starts over.
INTERRUPTED = "interrupted"
ABSENT = "absent"


@dataclass(frozen=True)
class LocalModelRow:
    model: CatalogueModel
    state: str  # absent, queued, downloading, verifying, done, failed, interrupted
    progress: Progress | None
    path: Path
    downloaded: bool
    chosen: bool
    bytes_done: int
    bytes_total: int | None

    @property
    def percent(self) -> float | None:
        if not self.bytes_total:
            return None
        return min(100.0, 100.0 * self.bytes_done / self.bytes_total)

    @property
    def busy(self) -> bool:
        return self.state in states.ACTIVE_STATES


@dataclass(frozen=True)
class RuntimeStatus:
    version: str | None  # installed version, None when missing
    state: str  # installed, absent, queued, installing, failed, interrupted
    progress: Progress | None
    manual_command: str
    estimate: str = ""

    @property
    def busy(self) -> bool:
        return self.state in states.ACTIVE_STATES


def local_model_choice() -> LocalChoice | None:
    """The local model the site uses: the Model page's set-up where it exists (a choice made
    there, of another provider, wins), else the last choice recorded in MODELS_DIR."""
    from autocoder.llm import selectors as llm_selectors

    site_get = getattr(llm_selectors, "site_model_config_get", None)
    if site_get is None:
        return _recorded_choice()
    site = site_get()
    if site is None or site.provider != "llamacpp" or not site.model:
        return None
    return LocalChoice(Path(site.model).expanduser().resolve(),
                       site.updated_by.get_username() if site.updated_by else "",
                       site.updated_at.timestamp())


def _recorded_choice() -> LocalChoice | None:
    try:
        data = json.loads((models_dir() / CHOICE_FILE).read_text())
        return LocalChoice(Path(data["model"]), data.get("chosen_by", ""),
                           float(data.get("chosen_at", 0)))
    except (FileNotFoundError, ValueError, KeyError, TypeError):
        return None


def local_model_rows() -> list[LocalModelRow]:
    choice = local_model_choice()
    return [_row(model, choice) for model in catalogue_list()]


def _row(model: CatalogueModel, choice: LocalChoice | None) -> LocalModelRow:
    files = ModelFiles.for_name(model.file_name)
    progress = states.read(files.state)
    downloaded = files.target.is_file()
    state = _effective_state(progress, files.lock, downloaded)
    bytes_done = files.target.stat().st_size if state == states.DONE and downloaded \
        else files.part_size()  # the .part file is the truth, the state file may lag behind
    total = (progress.bytes_total if progress else None) or model.size_bytes
    chosen = bool(choice and downloaded and choice.path == files.target.resolve())
    return LocalModelRow(model, state, progress, files.target, downloaded, chosen,
                         bytes_done, total)


def _effective_state(progress: Progress | None, lock: Path, downloaded: bool) -> str:
    if progress is None:
        return states.DONE if downloaded else ABSENT
    working = progress.state in (states.DOWNLOADING, states.VERIFYING, states.INSTALLING)
    if working and not is_locked(lock):
        return INTERRUPTED  # the process that worked on it is gone
    return progress.state


def local_runtime_status() -> RuntimeStatus:
    version = runtime.runtime_version()
    progress = states.read(runtime.state_path())
    if version is not None:
        state = "installed"
    else:
        state = _effective_state(progress, runtime.lock_path(), downloaded=False)
        if state == states.DONE:
            state = ABSENT  # said done, yet cannot be imported: uninstalled since
    return RuntimeStatus(version, state, progress, runtime.manual_command(),
                         runtime.estimate_words())


class LocalPanel(TypedDict, total=False):
    models: list[LocalModelRow]
    runtime: RuntimeStatus
    choice: LocalChoice | None
    models_dir: Path
    return_to: str  # the page the panel's forms go back to (local/views.py)


class LocalContext(TypedDict):
    local: LocalPanel


def local_model_context() -> LocalContext:
    """What templates/llm/_local_model.html needs, under the one name `local`."""
    return {"local": {"models": local_model_rows(), "runtime": local_runtime_status(),
                      "choice": local_model_choice(), "models_dir": models_dir()}}
