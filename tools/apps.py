from __future__ import annotations

from django.apps import AppConfig


class ToolsConfig(AppConfig):
    name = "tools"
    verbose_name = "Tools (activated plugins)"

    def ready(self) -> None:
        from autocoder import heartbeat, hooks
        from marketplace.services.trying import TRY_SETTINGS_HOOK
        from projects.selectors.inbox import INBOX_SOURCE
        from projects.selectors.insights import INSIGHT_SECTION
        from tools import insights, receivers, tasks  # noqa: F401  (signals, actors)
        from tools.inbox import INBOX_CHANGES
        from tools.services import invocations, schedule_runs, suggestions, tool_settings

        # Due schedules are sent every heartbeat (a few seconds); the invocation log is pruned
        # by the slow sweep (once a minute for the whole installation).
        heartbeat.sweep_register(schedule_runs.schedules_due_send, quick=True)
        heartbeat.sweep_register(invocations.invocations_prune, quick=False)
        # A tool that keeps failing is told to the team that uses it (every 15 minutes).
        heartbeat.sweep_register(suggestions.failing_tools_tell, quick=False)
        # "Try it" on a plugin the trier's team uses gets the team's settings (hooks.py).
        hooks.register(TRY_SETTINGS_HOOK, tool_settings.try_settings_of)
        # Change requests wait for the plugin's team in its Reviews inbox (tools/inbox.py).
        hooks.register(INBOX_SOURCE, INBOX_CHANGES)
        # The team's insight page shows the changes asked of its plugins (tools/insights.py).
        hooks.register(INSIGHT_SECTION, insights.plugin_changes_section)
        # Which warm sandboxes may stay, asked by every process's pool (docs/sandbox.md).
        from autocoder.sandbox import warm_pool
        from tools.services.warm import warm_wanted_checked

        warm_pool.set_wanted(warm_wanted_checked)
