from __future__ import annotations

from django.apps import AppConfig


class LLMConfig(AppConfig):
    name = "autocoder.llm"
    label = "llm"
    verbose_name = "Language models"
