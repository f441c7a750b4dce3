from __future__ import annotations

from django.contrib import admin

from projects.models import Interview


@admin.register(Interview)
class InterviewAdmin(admin.ModelAdmin):
    list_display = ["project", "team", "requester", "step", "analyst_rounds", "updated_at"]
    list_filter = ["step", "team"]
    search_fields = ["request", "project__name", "requester__username"]
    raw_id_fields = ["project", "requester"]
    readonly_fields = ["created_at", "updated_at"]
