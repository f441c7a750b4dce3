from __future__ import annotations

from decimal import Decimal
from typing import Any

from django import forms

from autocoder.money import currency
from teams.models import Membership, SiteTeamSettings, Team


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


class InvitationForm(forms.Form):
    invited_as = forms.CharField(
        label="User name or e-mail address", max_length=254,
        help_text="They are told in the portal and join only once they accept. Accounts are "
                  "created by a site administrator.",
        widget=forms.TextInput(attrs={"autocomplete": "off", "autocapitalize": "none",
                                      "spellcheck": "false"}))
    role = forms.ChoiceField(label="Role", choices=ROLE_CHOICES,
                             initial=Membership.Role.REQUESTER)

    def clean_invited_as(self) -> str:
        # Whether an account has this name is never said here (nor anywhere a team admin sees).
        name = " ".join(self.cleaned_data["invited_as"].split())
        if not name:
            raise forms.ValidationError("Enter a user name or an e-mail address.")
        return name


class MemberRoleForm(forms.Form):
    role = forms.ChoiceField(label="Role", choices=ROLE_CHOICES)


class SiteTeamSettingsForm(forms.ModelForm):
    class Meta:
        model = SiteTeamSettings
        fields = ["team_creation", "default_monthly_budget", "default_run_budget"]
        labels = {"team_creation": "Who may start a team"}
        widgets = {"team_creation": forms.RadioSelect}
        help_texts = {"team_creation": (
            "Whoever starts a team becomes its admin and can run generation on the site's model, "
            "at the site's cost. Site administrators can always start teams.")}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        money = currency()
        self.fields["default_monthly_budget"].label = f"Monthly budget of a new team ({money})"
        self.fields["default_monthly_budget"].help_text = (
            "What all of a new team's runs together may cost per calendar month. Empty: no "
            "limit.")
        self.fields["default_run_budget"].label = f"Budget per run of a new team ({money})"
        self.fields["default_run_budget"].help_text = (
            "What one run of a new team may cost before the team's admins are asked. Empty: no "
            "limit. Both apply to teams started from now on; each team's admins can change "
            "their own in the team settings.")
        for name in ("default_monthly_budget", "default_run_budget"):
            self.fields[name].widget.attrs.update({"min": "0.01", "step": "0.01",
                                                   "inputmode": "decimal"})

    def clean_default_monthly_budget(self) -> Decimal | None:
        return _budget(self.cleaned_data["default_monthly_budget"])

    def clean_default_run_budget(self) -> Decimal | None:
        return _budget(self.cleaned_data["default_run_budget"])


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
