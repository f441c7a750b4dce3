from __future__ import annotations

from django.urls import path

from autocoder.lessons import views

app_name = "lessons"
urlpatterns = [
    path("", views.lesson_list, name="list"),
    path("search/", views.lesson_search, name="search"),
    path("<int:lesson_id>/", views.lesson_detail, name="detail"),
    path("<int:lesson_id>/edit/", views.lesson_edit, name="edit"),
    path("<int:lesson_id>/retire/", views.lesson_retire, name="retire"),
    path("<int:lesson_id>/restore/", views.lesson_restore, name="restore"),
    path("<int:lesson_id>/promote/", views.lesson_promote, name="promote"),
]
