from __future__ import annotations

from django.apps import AppConfig


class AutocoderConfig(AppConfig):
    name = "autocoder"
    label = "autocoder"
    verbose_name = "Autocoder"
