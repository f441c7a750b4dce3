from __future__ import annotations

from django.apps import AppConfig


class LessonsConfig(AppConfig):
    name = "autocoder.lessons"
    label = "lessons"
    verbose_name = "Lessons learned"

    def ready(self) -> None:
        from autocoder import heartbeat
        from autocoder.lessons import tasks  # noqa: F401  (actors, sent by name)
        from autocoder.lessons.team_indexes import team_indexes_sweep

        # Big teams get an HNSW index of their own (autocoder/lessons/team_indexes.py).
        heartbeat.sweep_register(team_indexes_sweep, quick=False)
