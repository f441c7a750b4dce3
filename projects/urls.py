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
    path("t/<slug:slug>/members/add/", teams.team_member_add, name="team_member_add"),
    path("t/<slug:slug>/members/<int:pk>/role/", teams.team_member_role,
         name="team_member_role"),
    path("t/<slug:slug>/members/<int:pk>/remove/", teams.team_member_remove,
         name="team_member_remove"),
    path("teams/new/", teams.team_new, name="team_new"),
    path("t/<slug:slug>/board/", board.board, name="board"),
    path("t/<slug:slug>/board/queue/<int:pk>/move/", board.queue_move, name="board_queue_move"),
    path("t/<slug:slug>/audit/", audit.audit_log, name="audit_log"),
    path("runs/<int:pk>/", runs.run_detail, name="run_detail"),
    path("runs/<int:pk>/control/<str:action>/", runs.run_control, name="run_control"),
    path("approvals/", approvals.approval_list, name="approval_list"),
    path("approvals/<int:pk>/", approvals.approval_detail, name="approval_detail"),
    path("approvals/<int:pk>/decide/", approvals.approval_decide, name="approval_decide"),
    path("notifications/", notifications.notification_list, name="notification_list"),
    path("notifications/bell/", notifications.notification_bell, name="notification_bell"),
    path("notifications/read-all/", notifications.notifications_read_all,
         name="notifications_read_all"),
    path("notifications/<int:pk>/", notifications.notification_open, name="notification_open"),
    path("notifications/<int:pk>/read/", notifications.notification_read,
         name="notification_read"),
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
