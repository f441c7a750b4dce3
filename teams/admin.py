from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from teams.models import AuditEntry, Invitation, Membership, Team
from teams.selectors.site import team_budget_defaults


class MembershipInline(admin.TabularInline):
    """Site admins add members here directly, server-side (team admins invite them)."""

    model = Membership
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "requester_may_approve", "required_approvals", "created_at"]
    search_fields = ["name", "slug"]
    prepopulated_fields = {"slug": ["name"]}
    inlines = [MembershipInline]

    def get_changeform_initial_data(self, request: HttpRequest) -> dict[str, Any]:
        # A team created here starts with the site's default budgets too.
        return {**super().get_changeform_initial_data(request), **team_budget_defaults()}


@admin.register(Invitation)
class InvitationAdmin(admin.ModelAdmin):
    """Read-only: invitations are sent, answered and withdrawn in the portal (audited)."""

    list_display = ["invited_as", "team", "role", "status", "user", "created_at", "expires_at"]
    list_filter = ["status", "role"]
    search_fields = ["invited_as", "team__name", "team__slug"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(AuditEntry)
class AuditEntryAdmin(admin.ModelAdmin):
    """Read-only: the audit log is append-only, even for superusers."""

    list_display = ["created_at", "actor_name", "action", "target_type", "target_repr", "team"]
    list_filter = ["action", "target_type"]
    search_fields = ["actor_name", "action", "target_repr", "target_id"]
    date_hierarchy = "created_at"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False
