from __future__ import annotations

from django.contrib import admin

from autocoder.lessons.models import Lesson, LessonSource


class LessonSourceInline(admin.TabularInline):
    model = LessonSource
    extra = 0
    readonly_fields = ["team", "run_id", "iteration", "kind", "merged", "created_at"]
    can_delete = False


@admin.register(Lesson)
class LessonAdmin(admin.ModelAdmin):
    """Curating global lessons; text edits belong on the lesson page, which re-embeds them."""

    list_display = ["title", "kind", "team", "reliability", "retrieved_count", "helped_count",
                    "not_helped_count", "occurrences", "retired_at"]
    list_filter = ["kind", "retired_at", "team"]
    search_fields = ["title", "error_signature", "avoidance_rule"]
    exclude = ["embedding"]
    readonly_fields = ["title", "kind", "task_context", "error_signature", "failed_approach",
                       "resolution", "avoidance_rule", "reliability", "retrieved_count",
                       "helped_count", "not_helped_count", "occurrences", "source_run_id",
                       "source_iteration", "created_at", "updated_at"]
    inlines = [LessonSourceInline]

    def has_add_permission(self, request: object) -> bool:
        # A lesson needs an embedding; they are written by runs (or lesson_create), not here.
        return False
