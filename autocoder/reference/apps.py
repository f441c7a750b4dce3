from __future__ import annotations

from django.apps import AppConfig


class ReferenceConfig(AppConfig):
    name = "autocoder.reference"
    label = "reference"
    verbose_name = "Reference docs"
