"""/marketplace/: the portal pages. Included from config/urls.py."""

from __future__ import annotations

from django.urls import path

from marketplace.views import catalogue, history, index

app_name = "marketplace"

urlpatterns = [
    path("", catalogue.catalogue, name="catalogue"),
    path("upload/", catalogue.upload, name="upload"),
    path("pending/", catalogue.pending, name="pending"),
    path("tokens/", catalogue.tokens, name="tokens"),
    path("tokens/<int:token_id>/revoke/", catalogue.token_revoke, name="token_revoke"),
    path("publish/run/<int:run_id>/", catalogue.publish_run, name="publish_run"),
    path("files/<int:artifact_id>/<str:filename>", index.file_download, name="file"),
    path("p/<str:name>/", catalogue.plugin_detail, name="plugin"),
    path("p/<str:name>/settings/", catalogue.plugin_settings, name="settings"),
    path("p/<str:name>/review/", catalogue.review_save, name="review"),
    path("p/<str:name>/review/delete/", catalogue.review_remove, name="review_delete"),
    path("p/<str:name>/history/", history.history, name="history"),
    path("p/<str:name>/history/bundle/", history.history_bundle, name="history_bundle"),
    path("p/<str:name>/history/<str:version>/", history.history_diff, name="history_diff"),
    path("p/<str:name>/git/", history.git_root, name="git_root"),
    path("p/<str:name>/git/<path:path>", history.git_file, name="git_file"),
    path("p/<str:name>/v/<str:version>/", catalogue.version_detail, name="version"),
    path("p/<str:name>/v/<str:version>/try/", catalogue.plugin_try, name="try"),
    path("p/<str:name>/v/<str:version>/try/<int:try_id>/", catalogue.try_result,
         name="try_result"),
    path("p/<str:name>/v/<str:version>/decide/", catalogue.version_decide, name="decide"),
    path("p/<str:name>/v/<str:version>/yank/", catalogue.version_yank, name="yank"),
]
