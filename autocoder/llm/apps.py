from __future__ import annotations

from django.apps import AppConfig


class LLMConfig(AppConfig):
    name = "autocoder.llm"
    label = "llm"
    verbose_name = "Language models"

    def ready(self) -> None:
        from autocoder import heartbeat, installation
        from autocoder.llm.readiness import model_fault, model_reach_fault, model_reach_recheck

        installation.check_register("model", model_fault)
        installation.check_register("model_reach", model_reach_fault)
        # Every minute, a site model known not to answer is called again, so /healthz and
        # doctor turn ok by themselves once it answers (held runs: runs/apps.py).
        heartbeat.sweep_register(model_reach_recheck, quick=False)
