from __future__ import annotations

from django.apps import AppConfig


class MarketplaceConfig(AppConfig):
    name = "marketplace"
    verbose_name = "Marketplace"
