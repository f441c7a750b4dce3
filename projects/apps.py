from __future__ import annotations

from django.apps import AppConfig


class ProjectsConfig(AppConfig):
    name = "projects"
    verbose_name = "Teams and projects"

    def ready(self) -> None:
        from projects import receivers  # noqa: F401  (answers the runs app's signals)
