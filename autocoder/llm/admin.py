"""Admin for per-team model overrides; the API key is write-only."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin

from autocoder.llm.models import ModelPrice, TeamModelOverride


class TeamModelOverrideForm(forms.ModelForm):
    # Not the model field's name: ModelForm would copy a blank entry over the stored key.
    new_api_key = forms.CharField(
        label="API key", required=False, strip=True,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="Write-only: the stored key is never shown. Leave blank to keep it.")
    clear_api_key = forms.BooleanField(label="Remove the stored API key", required=False)

    class Meta:
        model = TeamModelOverride
        fields = ["team", "role", "provider", "model", "base_url"]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if cleaned.get("new_api_key") and cleaned.get("clear_api_key"):
            raise forms.ValidationError("Either enter a new API key or remove it, not both.")
        return cleaned

    def save(self, commit: bool = True) -> TeamModelOverride:
        override: TeamModelOverride = super().save(commit=False)
        if self.cleaned_data.get("new_api_key"):
            override.api_key = self.cleaned_data["new_api_key"]
        elif self.cleaned_data.get("clear_api_key"):
            override.api_key = ""
        if commit:
            override.save()
        return override


@admin.register(TeamModelOverride)
class TeamModelOverrideAdmin(admin.ModelAdmin):
    form = TeamModelOverrideForm
    list_display = ["team", "role", "provider", "model", "base_url", "api_key_status",
                    "updated_at"]
    list_filter = ["role", "provider"]
    search_fields = ["team__name", "team__slug", "model"]
    list_select_related = ["team"]
    autocomplete_fields = ["team"]
    readonly_fields = ["api_key_status", "updated_at"]
    fields = ["team", "role", "provider", "model", "base_url", "api_key_status", "new_api_key",
              "clear_api_key", "updated_at"]

    @admin.display(description="API key")
    def api_key_status(self, obj: TeamModelOverride) -> str:
        return obj.api_key_status


@admin.register(ModelPrice)
class ModelPriceAdmin(admin.ModelAdmin):
    """The price table (also on the Prices page, /settings/model/prices/): per million tokens,
    in the site's currency (COST_CURRENCY)."""

    list_display = ["model", "prompt_per_million", "completion_per_million", "updated_at",
                    "updated_by"]
    search_fields = ["model"]
    readonly_fields = ["updated_at", "updated_by"]
    fields = ["model", "prompt_per_million", "completion_per_million", "updated_at",
              "updated_by"]

    def save_model(self, request: Any, obj: ModelPrice, form: Any, change: bool) -> None:
        obj.updated_by = request.user
        super().save_model(request, obj, form, change)
