from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.urls import path

from projects import views

urlpatterns = [
    path("", views.home, name="home"),
    path("login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("teams/switch/", views.team_switch, name="team_switch"),
    path("t/<slug:slug>/", views.team_detail, name="team_detail"),
    path("t/<slug:slug>/settings/", views.team_settings, name="team_settings"),
]
