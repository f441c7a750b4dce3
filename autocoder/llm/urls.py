from __future__ import annotations

from django.urls import path

from autocoder.llm import views

app_name = "llm"

urlpatterns = [
    path("", views.model_settings, name="model_settings"),
    path("test/", views.model_test, name="model_test"),
    path("prices/", views.model_prices, name="model_prices"),
    path("prices/delete/", views.model_price_delete, name="model_price_delete"),
]
