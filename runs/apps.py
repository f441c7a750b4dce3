from __future__ import annotations

from django.apps import AppConfig


class RunsConfig(AppConfig):
    name = "runs"
    verbose_name = "Runs and approvals"

    def ready(self) -> None:
        from autocoder import durable, heartbeat
        from autocoder.llm import services as llm_services
        from runs import tasks  # noqa: F401  (declares the run_step actor in every process)
        from runs.models import StepOutbox
        from runs.services import holding, outbox, resending

        # The outbox's table (autocoder/durable.py sends by actor name; a step row, which
        # names no actor, goes out as the run's next step).
        durable.outbox_register(StepOutbox, deliver=outbox.step_deliver)
        # The watchdog: what the outbox still holds and the steps of dead workers every
        # heartbeat interval; stalled runs and held runs whose part works again every minute.
        heartbeat.sweep_register(outbox.outbox_sweep, quick=True)
        heartbeat.sweep_register(resending.runs_orphaned_kick, quick=True)
        heartbeat.sweep_register(resending.runs_stalled_kick, quick=False)
        heartbeat.sweep_register(holding.runs_held_release, quick=False)
        # Saving a working model set-up lets the runs held for it go on at once.
        if holding.runs_held_release not in llm_services.HELD_RUNS_RELEASERS:
            llm_services.HELD_RUNS_RELEASERS.append(holding.runs_held_release)
