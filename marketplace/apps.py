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
        from marketplace.services.trying import plugin_tries_orphaned_kick, plugin_tries_stalled_end

        # The watchdog hands a dead worker's check or try to another one, re-sends stalled
        # checks and ends tries that never finished.
        heartbeat.sweep_register(plugin_checks_orphaned_kick, quick=True)
        heartbeat.sweep_register(plugin_checks_stalled_kick, quick=False)
        heartbeat.sweep_register(plugin_tries_orphaned_kick, quick=True)
        heartbeat.sweep_register(plugin_tries_stalled_end, quick=False)
