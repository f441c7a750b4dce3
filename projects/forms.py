from __future__ import annotations

from decimal import Decimal
from typing import Any

from django import forms
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User

from autocoder.llm.pricing import currency
from projects.models import Membership, Team


class TeamSettingsForm(forms.ModelForm):
    class Meta:
        model = Team
        fields = ["requester_may_approve", "required_approvals", "monthly_budget",
                  "run_budget"]
        labels = {
            "requester_may_approve": "Requesters may approve their own projects",
            "required_approvals": "Approvals needed at each gate",
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        money = currency()
        self.fields["monthly_budget"].label = f"Monthly budget ({money})"
        self.fields["monthly_budget"].help_text = (
            "What all the team's runs together may cost per calendar month. At 80% the team's "
            "admins are told; at 100% a run waits until an admin allows more. Empty: no limit.")
        self.fields["run_budget"].label = f"Budget per run ({money})"
        self.fields["run_budget"].help_text = (
            "What one run may cost before it waits for an admin to allow more. It applies to "
            "runs started from now on. Empty: no limit.")
        for name in ("monthly_budget", "run_budget"):
            self.fields[name].widget.attrs.update({"min": "0.01", "step": "0.01",
                                                   "inputmode": "decimal"})

    def clean_required_approvals(self) -> int:
        value = self.cleaned_data["required_approvals"]
        if not 1 <= value <= 5:
            raise forms.ValidationError("Choose between 1 and 5 approvals.")
        return value

    def clean_monthly_budget(self) -> Decimal | None:
        return _budget(self.cleaned_data["monthly_budget"])

    def clean_run_budget(self) -> Decimal | None:
        return _budget(self.cleaned_data["run_budget"])


def _budget(value: Decimal | None) -> Decimal | None:
    if value is not None and value <= 0:
        raise forms.ValidationError("A budget is more than zero; leave it empty for no limit.")
    return value.quantize(Decimal("0.01")) if value is not None else None


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
