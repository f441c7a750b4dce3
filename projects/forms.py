from __future__ import annotations

from django import forms

from projects.models import Team


class TeamSettingsForm(forms.ModelForm):
    class Meta:
        model = Team
        fields = ["requester_may_approve", "required_approvals"]
        labels = {
            "requester_may_approve": "Requesters may approve their own projects",
            "required_approvals": "Approvals needed at each gate",
        }

    def clean_required_approvals(self) -> int:
        value = self.cleaned_data["required_approvals"]
        if not 1 <= value <= 5:
            raise forms.ValidationError("Choose between 1 and 5 approvals.")
        return value
