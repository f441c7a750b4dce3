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
        self._installation_checks_register()

    @staticmethod
    def _installation_checks_register() -> None:
        from autocoder import installation
        from autocoder.sandbox.probe import runtime_fault

        # The plugin runtime's probe also starts a sandbox, so it answers for both parts.
        installation.check_register("runtime", runtime_fault)
        installation.check_register("sandbox", runtime_fault)
