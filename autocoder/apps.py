from __future__ import annotations

from django.apps import AppConfig


class AutocoderConfig(AppConfig):
    name = "autocoder"
    label = "autocoder"
    verbose_name = "Autocoder"

    def ready(self) -> None:
        from django.conf import settings

        from autocoder import metrics

        metrics.configure(settings.METRICS_DIR)
