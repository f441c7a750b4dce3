from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.urls import path

from projects.views import teams

urlpatterns = [
    path("", teams.home, name="home"),
    path("login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("teams/switch/", teams.team_switch, name="team_switch"),
    path("t/<slug:slug>/", teams.team_detail, name="team_detail"),
    path("t/<slug:slug>/settings/", teams.team_settings, name="team_settings"),
]
