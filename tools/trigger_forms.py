"""The form that sets up a trigger on a tool's Triggers page, in plain words; the service
(tools/services/triggers.py) checks and saves what it reads."""

from __future__ import annotations

from typing import Any

from django import forms

from tools.json_input import JsonInputError, json_input_parse

SENDERS = (
    ("github", "GitHub (a repository's or organisation's webhook)"),
    ("slack", "Slack (an app's events or a slash command)"),
    ("stripe", "Stripe (a webhook endpoint)"),
    ("plain", "Another system that signs with X-Signature-256"),
)


class TriggerForm(forms.Form):
    """After `is_valid()`: `fixed_value` is the fixed values as a dict."""

    name = forms.CharField(label="Name", max_length=80, required=False,
                           help_text="So the team knows it, like “New orders from Stripe”.")
    command = forms.ChoiceField(label="Command it runs")
    scheme = forms.ChoiceField(label="Who sends it", choices=SENDERS, initial="github",
                               widget=forms.RadioSelect)
    event_field = forms.CharField(
        label="Field the event goes into", max_length=64, initial="event",
        help_text="The command gets what the sender posted under this name.")
    fixed = forms.CharField(
        label="Fixed values (JSON)", required=False, initial="{}",
        widget=forms.Textarea(attrs={"rows": 3, "spellcheck": "false"}),
        help_text='Sent with every event, like {"channel": "sales"}. Leave {} for none.')
    secret = forms.CharField(
        label="Signing secret", required=False, strip=True,
        widget=forms.PasswordInput(attrs={"autocomplete": "off"}),
        help_text="Slack and Stripe show you theirs: paste it here (for Stripe you may add it "
                  "after saving the address there). For GitHub and other systems leave it "
                  "empty: the portal makes one and shows it once.")

    def __init__(self, *args: Any, commands: list[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        command_field = self.fields["command"]
        assert isinstance(command_field, forms.ChoiceField)
        command_field.choices = [(name, name) for name in commands]
        for name, field in self.fields.items():
            field.widget.attrs.setdefault("id", f"trigger-{name.replace('_', '-')}")
        self.fixed_value: dict[str, object] = {}

    def clean_fixed(self) -> str:
        text = (self.cleaned_data.get("fixed") or "").strip() or "{}"
        try:
            value = json_input_parse(text)
        except JsonInputError as exc:
            raise forms.ValidationError(f"Not JSON: {exc}" if not exc.syntax else
                                        'Not JSON: write an object, like {"channel": "sales"}.'
                                        ) from exc
        if not isinstance(value, dict):
            raise forms.ValidationError('Write an object, like {"channel": "sales"}.')
        self.fixed_value = value
        return text
