from __future__ import annotations

from django.apps import AppConfig


class MarketplaceConfig(AppConfig):
    name = "marketplace"
    verbose_name = "Marketplace"

    def ready(self) -> None:
        from autocoder import heartbeat
        from marketplace import services, tasks  # noqa: F401  (declares the actors)

        # The watchdog hands a dead worker's check to another one, and re-sends stalled ones.
        heartbeat.sweep_register(services.plugin_checks_orphaned_kick, quick=True)
        heartbeat.sweep_register(services.plugin_checks_stalled_kick, quick=False)
