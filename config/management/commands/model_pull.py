"""`manage.py model_pull [NAME|URL] [--sha256 X] [--from FILE] [--json]`: the Model page's
"Download" from the shell, through the same service (resume, checksum, progress file)."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from autocoder.llm.local.catalogue import CatalogueModel, catalogue_get, catalogue_list
from autocoder.llm.local.download import (
    DownloadError,
    DownloadResult,
    model_download,
    model_import,
)
from autocoder.llm.local.files import file_name_from_url
from autocoder.llm.local.progress import Progress

BAR_WIDTH = 30


class Command(BaseCommand):
    help = ("Download a local model (a catalogue NAME or a URL of a .gguf file) into MODELS_DIR, "
            "resuming an interrupted download and checking its SHA-256; --from FILE takes a "
            "file downloaded elsewhere. Without NAME, lists the catalogue.")

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("name", nargs="?", default="",
                            help="catalogue name (see the list without arguments) or a URL")
        parser.add_argument("--sha256", default="", help="expected SHA-256 of the file")
        parser.add_argument("--from", dest="source", type=Path, default=None,
                            help="use this file (downloaded elsewhere) instead of downloading")
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        if not options["name"] and options["source"] is None:
            self._list(as_json=options["json"])
            return
        try:
            result = self._pull(options)
        except (DownloadError, ValueError) as error:
            if options["json"]:
                self.stdout.write(json.dumps({"state": "failed", "error": str(error)}))
                raise SystemExit(1) from None
            raise CommandError(str(error)) from None
        if options["json"]:
            self.stdout.write(json.dumps(result.as_dict()))
        else:
            self._report(result)

    def _pull(self, options: dict[str, Any]) -> DownloadResult:
        name, source = options["name"], options["source"]
        entry = catalogue_get(name) if name else None
        if name and entry is None and not name.startswith(("http://", "https://")):
            known = ", ".join(model.slug for model in catalogue_list())
            raise ValueError(f"{name!r} is neither a catalogue name ({known}) nor a URL")
        target = _target(name, entry, options["sha256"])
        on_progress = None if options["json"] else _ProgressBar(sys.stderr)
        if source is not None:
            return model_import(source=source, file_name=target.file_name or source.name,
                                sha256=target.sha256, size=target.size,
                                on_progress=on_progress)
        return model_download(url=target.url, file_name=target.file_name,
                              sha256=target.sha256, size=target.size,
                              on_progress=on_progress)

    def _list(self, *, as_json: bool) -> None:
        models = catalogue_list()
        if as_json:
            self.stdout.write(json.dumps({"models": [
                {"name": m.slug, "title": m.name, "file_name": m.file_name, "url": m.url,
                 "size": m.size_bytes, "sha256": m.sha256 or None} for m in models]}))
            return
        for model in models:
            self.stdout.write(f"{model.slug:<22} {model.size_text:<14} {model.name}")
        self.stdout.write("Pull one with: python manage.py model_pull NAME")

    def _report(self, result: DownloadResult) -> None:
        what = "already there" if result.already_present else (
            f"resumed at {result.resumed_from} bytes" if result.resumed_from else "downloaded")
        self.stdout.write(self.style.SUCCESS(f"{result.path} ({result.size} bytes, {what})"))
        self.stdout.write(f"SHA-256 {result.sha256} ({result.checksum_source})")
        self.stdout.write(f"To use it: choose it on the Model page, or set LLM_PROVIDER=llamacpp "
                          f"and LLM_MODEL={result.path}")


@dataclass(frozen=True)
class _Target:
    url: str
    file_name: str
    sha256: str
    size: int | None


def _target(name: str, entry: CatalogueModel | None, sha256: str) -> _Target:
    if entry is not None:
        return _Target(url=entry.url, file_name=entry.file_name,
                       sha256=sha256 or entry.sha256, size=entry.size_bytes)
    return _Target(url=name, file_name=file_name_from_url(name) if name else "",
                   sha256=sha256, size=None)


class _ProgressBar:
    """One line on stderr, redrawn in place: [#####.....] 45% 120.0 of 253.1 MB, 35.2 MB/s."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.last_state = ""

    def __call__(self, progress: Progress) -> None:
        if progress.state != self.last_state and self.last_state:
            self.stream.write("\n")
        self.last_state = progress.state
        self.stream.write(f"\r{progress.state:<11} {_bar(progress)}")
        if progress.state in ("done", "failed"):
            self.stream.write("\n")
        self.stream.flush()


def _bar(progress: Progress) -> str:
    mb = 1024 * 1024
    done = f"{progress.bytes_done / mb:.1f}"
    if progress.percent is None:
        return f"{done} MB"
    filled = int(BAR_WIDTH * progress.percent / 100)
    speed = f", {progress.speed_bps / mb:.1f} MB/s" if progress.speed_bps else ""
    return (f"[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {progress.percent:3.0f}% "
            f"{done} of {(progress.bytes_total or 0) / mb:.1f} MB{speed}")
