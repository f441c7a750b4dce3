from __future__ import annotations

from django.apps import AppConfig


class SiteConfig(AppConfig):
    """The site's own app: its management commands (`up`, `doctor`, `generate`, the benchmarks)
    and the system checks of config/checks.py."""

    name = "config"
    label = "config"
    verbose_name = "The site"

    def ready(self) -> None:
        from config import checks  # noqa: F401  (registers the secret key's system check)
