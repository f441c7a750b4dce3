from __future__ import annotations

from django.apps import AppConfig


class MarketplaceConfig(AppConfig):
    name = "marketplace"
    verbose_name = "Marketplace"

    def ready(self) -> None:
        from autocoder import heartbeat
        from marketplace import tasks  # noqa: F401  (declares the actors)
        from marketplace.services.checking import (
            plugin_checks_orphaned_kick,
            plugin_checks_stalled_kick,
        )

        # The watchdog hands a dead worker's check to another one, and re-sends stalled ones.
        heartbeat.sweep_register(plugin_checks_orphaned_kick, quick=True)
        heartbeat.sweep_register(plugin_checks_stalled_kick, quick=False)
