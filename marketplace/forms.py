"""Forms of the marketplace pages: they parse and bound input; services apply the rules."""

from __future__ import annotations

from typing import Any

from django import forms
from packaging.version import InvalidVersion, Version

from marketplace.models import Plugin
from marketplace.try_input import TryInputError, command_example, try_payload
from marketplace.types import StoredCommand
from marketplace.validation import MAX_ARCHIVE_BYTES, PackageError, clean_tags
from teams.models import Team


class TagsField(forms.CharField):
    """Comma-separated tags, cleaned to the marketplace's tag rules."""

    def clean(self, value: Any) -> list[str]:
        text = super().clean(value) or ""
        try:
            return list(clean_tags(part for part in text.split(",")))
        except PackageError as exc:
            raise forms.ValidationError(exc.errors) from None


class ListingForm(forms.Form):
    visibility = forms.ChoiceField(
        choices=Plugin.Visibility.choices, initial=Plugin.Visibility.TEAM,
        help_text="For a new plugin. A published plugin keeps its listing; its team's admins"
                  " change it on the plugin's page.")
    category = forms.ChoiceField(choices=[("", "As plugin.toml says (or Other)"),
                                          *Plugin.Category.choices], required=False)
    tags = TagsField(required=False, max_length=400,
                     help_text="Comma-separated, e.g. calendar, shifts. Empty: plugin.toml's.")
    changelog = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 4}),
                                max_length=20_000, help_text="What changed in this version.")


class UploadForm(ListingForm):
    team = forms.ModelChoiceField(queryset=Team.objects.none(), empty_label=None)
    package = forms.FileField(help_text="The plugin directory as a .zip, or a pure-Python wheel.")

    field_order = ["team", "package", "visibility", "category", "tags", "changelog"]

    def __init__(self, *args: Any, teams: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        team_field = self.fields["team"]
        assert isinstance(team_field, forms.ModelChoiceField)
        team_field.queryset = teams if teams is not None else Team.objects.none()

    def clean_package(self) -> Any:
        upload = self.cleaned_data["package"]
        if upload.size > MAX_ARCHIVE_BYTES:
            raise forms.ValidationError(f"The file is {upload.size // 2**20} MB; at most"
                                        f" {MAX_ARCHIVE_BYTES // 2**20} MB are accepted.")
        if not upload.name.lower().endswith((".zip", ".whl")):
            raise forms.ValidationError("Upload a .zip of the plugin directory or a .whl wheel.")
        return upload


class PublishRunForm(ListingForm):
    version = forms.CharField(max_length=64, required=False,
                              help_text="Empty: the version in plugin.toml.")

    field_order = ["version", "visibility", "category", "tags", "changelog"]

    def clean_version(self) -> str:
        text = self.cleaned_data["version"].strip()
        if not text:
            return ""
        try:
            return str(Version(text))
        except InvalidVersion:
            raise forms.ValidationError("Use a version like 1.0.0 (PEP 440).") from None


class PluginSettingsForm(forms.Form):
    visibility = forms.ChoiceField(choices=Plugin.Visibility.choices)
    category = forms.ChoiceField(choices=Plugin.Category.choices)
    tags = TagsField(required=False, max_length=400)


class ReviewForm(forms.Form):
    rating = forms.TypedChoiceField(choices=[(i, f"{i} star{'s' if i > 1 else ''}")
                                             for i in range(5, 0, -1)], coerce=int)
    body = forms.CharField(required=False, max_length=5000, widget=forms.Textarea(
        attrs={"rows": 4}), label="Review")


class TryForm(forms.Form):
    """A command and its input: a JSON object, or for a command with one input the text, a
    number or a pasted table (marketplace/try_input.py)."""

    command = forms.ChoiceField(choices=[])
    payload = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 5, "spellcheck": "false",
                                     "aria-describedby": "try-payload-help"}),
        max_length=20_000, initial="{}", label="Input", required=False,
        help_text="JSON, like the example; for a command with one input, the text itself or a "
                  "table (CSV, or copied from a spreadsheet) works too.")
    # For a plugin that talks to other services: a rehearsal (nothing sent) unless "send",
    # which needs the box ticked (marketplace/services/trying.py).
    mode = forms.ChoiceField(choices=[("rehearse", "Rehearse"), ("send", "Send for real")],
                             required=False, initial="rehearse")
    confirm = forms.BooleanField(required=False)

    def __init__(self, *args: Any, commands: list[StoredCommand] | None = None,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commands = commands or []
        command_field = self.fields["command"]
        assert isinstance(command_field, forms.ChoiceField)
        command_field.choices = [(c["name"], c["name"]) for c in self.commands]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if "command" not in cleaned:
            return cleaned
        example = command_example(self.commands, cleaned["command"])
        try:
            cleaned["payload"] = try_payload(cleaned.get("payload") or "", example)
        except TryInputError as exc:
            self.add_error("payload", str(exc))
        return cleaned


class DecisionForm(forms.Form):
    decision = forms.ChoiceField(choices=[("approve", "Approve"), ("reject", "Reject")])
    comment = forms.CharField(required=False, max_length=4000,
                              widget=forms.Textarea(attrs={"rows": 2}))


class YankForm(forms.Form):
    reason = forms.CharField(max_length=300, help_text="Shown by pip and on the page.")


class TokenForm(forms.Form):
    name = forms.CharField(max_length=80, help_text="Where it will be used, e.g. 'laptop'.")
