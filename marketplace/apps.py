from __future__ import annotations

from django.apps import AppConfig


class MarketplaceConfig(AppConfig):
    name = "marketplace"
    verbose_name = "Marketplace"

    def ready(self) -> None:
        from autocoder import heartbeat, hooks
        from marketplace import (
            receivers,  # noqa: F401  (answers the runs app's signals)
            tasks,  # noqa: F401  (declares the actors)
        )
        from marketplace.approvals import PUBLISH_GATE
        from marketplace.inbox import INBOX_UPLOADS
        from marketplace.services.checking import (
            plugin_checks_orphaned_kick,
            plugin_checks_stalled_kick,
        )
        from marketplace.services.trying import plugin_tries_orphaned_kick, plugin_tries_stalled_end
        from projects.approval_extras import APPROVAL_EXTRA
        from projects.selectors.inbox import INBOX_SOURCE

        # The watchdog hands a dead worker's check or try to another one, re-sends stalled
        # checks and ends tries that never finished.
        heartbeat.sweep_register(plugin_checks_orphaned_kick, quick=True)
        heartbeat.sweep_register(plugin_checks_stalled_kick, quick=False)
        heartbeat.sweep_register(plugin_tries_orphaned_kick, quick=True)
        heartbeat.sweep_register(plugin_tries_stalled_end, quick=False)
        # Uploaded versions wait in the reviewer's inbox beside a run's gates.
        hooks.register(INBOX_SOURCE, INBOX_UPLOADS)
        # A run's publish request chooses what approving publishes, on its review page.
        hooks.register(APPROVAL_EXTRA, PUBLISH_GATE)
