from __future__ import annotations

from django import forms
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User

from projects.models import Membership, Team


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


ROLE_CHOICES = [(role.value, role.label) for role in Membership.Role]


class MemberAddForm(forms.Form):
    username = forms.CharField(label="User name", max_length=150,
                               help_text="Their log-in name. Accounts are created by a site "
                                         "administrator.")
    role = forms.ChoiceField(label="Role", choices=ROLE_CHOICES,
                             initial=Membership.Role.REQUESTER)

    def clean_username(self) -> User:
        name = self.cleaned_data["username"].strip()
        user = get_user_model().objects.filter(username__iexact=name, is_active=True).first()
        if user is None:
            raise forms.ValidationError(f"No account is called “{name}”. Ask a site "
                                        "administrator to create it first.")
        return user


class MemberRoleForm(forms.Form):
    role = forms.ChoiceField(label="Role", choices=ROLE_CHOICES)


class TeamCreateForm(forms.ModelForm):
    class Meta:
        model = Team
        fields = ["name", "slug"]
        labels = {"name": "Team name", "slug": "Short name for links"}
        help_texts = {"slug": "Letters, digits and hyphens, e.g. finance-team."}


class InsightsPeriodForm(forms.Form):
    """The period of "How generation is going": the last N weeks, or chosen dates."""

    WEEKS = [(4, "Last 4 weeks"), (12, "Last 12 weeks"), (26, "Last 26 weeks"),
             (52, "Last 52 weeks")]

    weeks = forms.TypedChoiceField(choices=WEEKS, coerce=int, required=False, initial=12,
                                   label="Period")
    since = forms.DateField(required=False, label="Or from",
                            widget=forms.DateInput(attrs={"type": "date"}))
    until = forms.DateField(required=False, label="until",
                            widget=forms.DateInput(attrs={"type": "date"}))
