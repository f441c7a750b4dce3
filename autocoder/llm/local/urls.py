"""Included under /settings/model/local/ (config/urls.py)."""

from __future__ import annotations

from django.urls import path

from autocoder.llm.local import views

app_name = "local_models"
urlpatterns = [
    path("", views.local_models_page, name="page"),
    path("status/", views.local_models_status, name="status"),
    path("runtime/install/", views.local_runtime_install, name="runtime_install"),
    path("<str:slug>/download/", views.local_model_download, name="download"),
    path("<str:slug>/use/", views.local_model_use, name="use"),
]
