from __future__ import annotations

from django.urls import path

from tools.views import api, changes, pages, triggers, warm

app_name = "tools"

TOOL = "t/<slug:slug>/tools/<str:name>/"

urlpatterns = [
    path("api/tools/<slug:team_slug>/<str:plugin_name>/<str:command>", api.tool_api,
         name="api"),
    path("tools/kill-switch/", pages.kill_switch, name="kill_switch"),
    path("tools/changes/ask/<str:name>/", changes.change_ask, name="change_ask"),
    path("tools/changes/<int:pk>/", changes.change_detail, name="change"),
    path("t/<slug:slug>/change-requests/", changes.change_list, name="changes"),
    path("t/<slug:slug>/tools/", pages.tool_list, name="list"),
    path("t/<slug:slug>/tools/activations/<int:pk>/", pages.activation_detail,
         name="activation"),
    path("t/<slug:slug>/tools/activate/<str:name>/<str:version>/", pages.activation_new,
         name="activate"),
    path(TOOL, pages.tool_detail, name="detail"),
    path(TOOL + "run/<str:command>/", pages.tool_run, name="run"),
    path(TOOL + "results/<int:pk>/", pages.tool_result, name="result"),
    path(TOOL + "results/<int:pk>/download.<str:fmt>", pages.tool_result_download,
         name="download"),
    path(TOOL + "log/", pages.tool_log, name="log"),
    path(TOOL + "settings/", pages.tool_settings_page, name="settings"),
    path(TOOL + "tokens/", pages.tool_tokens, name="tokens"),
    path(TOOL + "schedules/", pages.tool_schedules, name="schedules"),
    path(TOOL + "rollback/", pages.tool_rollback, name="rollback"),
    path(TOOL + "deactivate/", pages.tool_deactivate, name="deactivate"),
    path("hooks/<str:public_id>/", triggers.hook, name="hook"),
    path(TOOL + "triggers/", triggers.tool_triggers, name="triggers"),
    path(TOOL + "warm/", warm.tool_warm, name="warm"),
]
