"""`manage.py lessons_search "text" [--team SLUG] [--k N] [--json]`: what a run would retrieve."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from autocoder.lessons.embedder import EmbedderError
from autocoder.lessons.selectors import RETRIEVAL_MIN_SIMILARITY, lessons_retrieve
from teams.models import Team


class Command(BaseCommand):
    help = ("Print the lessons best matching a text (an error or a task) with their similarity, "
            "as a run of the team would retrieve them. Without --team: global lessons only.")

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("text")
        parser.add_argument("--team", default="", help="team slug")
        parser.add_argument("--k", type=int, default=5, help="how many lessons (default 5)")
        parser.add_argument("--min-similarity", type=float, default=RETRIEVAL_MIN_SIMILARITY,
                            help=f"cosine floor (default {RETRIEVAL_MIN_SIMILARITY}; 0 shows all)")
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        team = None
        if options["team"]:
            team = Team.objects.filter(slug=options["team"]).first()
            if team is None:
                raise CommandError(f"no team with slug {options['team']!r}")
        if options["k"] < 1:
            raise CommandError("--k must be at least 1")
        try:
            found = lessons_retrieve(team_id=team.pk if team else None,
                                     query=options["text"], k=options["k"],
                                     min_similarity=options["min_similarity"])
        except EmbedderError as exc:
            raise CommandError(f"embedding failed: {exc}") from exc
        if options["json"]:
            payload = {"query": options["text"], "team": team.slug if team else None,
                       "results": [asdict(lesson) for lesson in found]}
            self.stdout.write(json.dumps(payload))
            return
        if not found:
            self.stdout.write("No lesson is similar enough (try --min-similarity 0).")
        for rank, lesson in enumerate(found, start=1):
            self.stdout.write(f"{rank}. [{lesson.similarity:.3f}] #{lesson.id} {lesson.kind}: "
                              f"{lesson.title}\n   rule: {lesson.avoidance_rule}\n"
                              f"   reliability {lesson.reliability:.2f}")
