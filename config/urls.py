from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

from config import views

# A page that fails because the database does not answer says so with a 503; anything else is
# Django's 500 page (autocoder/database/unavailable.py).
handler500 = "autocoder.database.unavailable.server_error"

urlpatterns = [
    path("healthz", views.healthz, name="healthz"),
    path("metrics", views.metrics, name="metrics"),
    path("admin/", admin.site.urls),
    path("simple/", include("marketplace.index_urls")),
    path("marketplace/", include("marketplace.urls")),
    path("lessons/", include("autocoder.lessons.urls")),
    path("settings/model/local/", include("autocoder.llm.local.urls")),
    path("settings/model/", include("autocoder.llm.urls")),
    path("", include("tools.urls")),
    path("", include("projects.urls")),
]
