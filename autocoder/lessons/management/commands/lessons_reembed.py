"""`manage.py lessons_reembed [--all] [--batch N]`: embed lessons again with the current model."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from autocoder.lessons.embedder import EmbedderError, embedder_identity
from autocoder.lessons.services import lessons_reembed


class Command(BaseCommand):
    help = ("After EMBEDDER or EMBEDDINGS_MODEL changed: embed the lessons made with another "
            "model again, so retrieval finds them. Safe to interrupt and run again.")

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--all", action="store_true", dest="everything",
                            help="embed every lesson again, not only those of another model")
        parser.add_argument("--batch", type=int, default=256, help="lessons per transaction")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["batch"] < 1:
            raise CommandError("--batch must be at least 1")
        self.stdout.write(f"embedding with {embedder_identity()}")

        def progress(done: int, total: int) -> None:
            self.stdout.write(f"  {done}/{total} lessons")

        try:
            count = lessons_reembed(everything=options["everything"],
                                    batch_size=options["batch"], progress=progress)
        except EmbedderError as exc:
            raise CommandError(f"the embedder failed: {exc} (lessons done so far are kept)") \
                from exc
        self.stdout.write(self.style.SUCCESS(
            f"{count} lesson{'s' if count != 1 else ''} embedded again" if count
            else "every lesson is already embedded with this model"))
