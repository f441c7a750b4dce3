from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.urls import path

from projects.views import approvals, audit, board, interviews, notifications, runs, teams

urlpatterns = [
    path("", teams.home, name="home"),
    path("login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("teams/switch/", teams.team_switch, name="team_switch"),
    path("t/<slug:slug>/", teams.team_detail, name="team_detail"),
    path("t/<slug:slug>/settings/", teams.team_settings, name="team_settings"),
    path("new/", interviews.interview_new_current, name="interview_new_current"),
    path("t/<slug:slug>/new/", interviews.interview_new, name="interview_new"),
    path("interviews/<int:pk>/", interviews.interview_detail, name="interview_detail"),
    path("interviews/<int:pk>/describe/", interviews.interview_describe,
         name="interview_describe"),
    path("interviews/<int:pk>/questions/", interviews.interview_questions,
         name="interview_questions"),
    path("interviews/<int:pk>/summary/", interviews.interview_summary, name="interview_summary"),
    path("interviews/<int:pk>/start/", interviews.interview_start, name="interview_start"),
]
