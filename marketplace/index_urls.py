"""/simple/: the package index (PEP 503/691). Included from config/urls.py."""

from __future__ import annotations

from django.urls import path

from marketplace.views import index

app_name = "simple"

urlpatterns = [
    path("", index.simple_root, name="index"),
    path("<str:name>/", index.simple_project, name="project"),
]
