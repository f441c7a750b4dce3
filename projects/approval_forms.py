"""Forms of the review side: a decision on an approval request, the audit log's filters."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from django import forms
from packaging.version import InvalidVersion, Version

from runs.approval_rules import decisions_allowed
from runs.models import ApprovalRequest, ApprovalVote

if TYPE_CHECKING:
    from marketplace.proposals import PublishChoice

Decision = ApprovalVote.Decision
LABELS = {
    Decision.APPROVE: "Approve",
    Decision.REJECT: "Reject",
    Decision.REQUEST_CHANGES: "Request changes (your comment goes into the next prompt)",
    Decision.ANSWER: "Answer with guidance (the run continues with your advice)",
}
ESCALATION_LABELS = {Decision.REJECT: "Stop the run"}
ORDER = [Decision.APPROVE, Decision.ANSWER, Decision.REQUEST_CHANGES, Decision.REJECT]


PUBLISH_LABELS = {Decision.APPROVE: "Approve and publish"}


def budget_labels(approval: ApprovalRequest) -> dict[Decision, str]:
    """"Continue with 2.00 USD more" / "Stop the run": the question the request asks."""
    budget = (approval.payload or {}).get("budget") or {}
    more = f"{budget.get('more', '')} {budget.get('currency', '')}".strip()
    return {Decision.APPROVE: f"Continue with {more} more" if more else "Continue",
            Decision.REJECT: "Stop the run"}
PUBLISH_FIELDS = ("version", "visibility", "category")


class ApprovalDecisionForm(forms.Form):
    decision = forms.ChoiceField(widget=forms.RadioSelect, label="Your decision")
    comment = forms.CharField(widget=forms.Textarea(attrs={"rows": 4}), required=False,
                              max_length=4000, label="Comment")
    candidate = forms.CharField(widget=forms.HiddenInput)

    def __init__(self, *args: Any, approval: ApprovalRequest,
                 publish: PublishChoice | None = None, **kwargs: Any) -> None:
        """`publish`: for a run's publish request, what approving publishes (the version,
        visibility and category are chosen here, with the decision, in one step)."""
        super().__init__(*args, **kwargs)
        allowed = decisions_allowed(approval.kind)
        labels: dict[Decision, str] = {}
        if approval.kind == ApprovalRequest.Kind.ESCALATION:
            labels = ESCALATION_LABELS
        elif approval.kind == ApprovalRequest.Kind.BUDGET:
            labels = budget_labels(approval)
        elif approval.kind == ApprovalRequest.Kind.PUBLISH and publish is not None:
            labels = PUBLISH_LABELS
        decision = cast(forms.ChoiceField, self.fields["decision"])
        decision.choices = [(d.value, labels.get(d, LABELS[d])) for d in ORDER if d in allowed]
        if approval.kind == ApprovalRequest.Kind.ESCALATION:
            self.fields["comment"].label = "Your guidance for the run"
            self.fields["comment"].help_text = "Required to answer: what should it try instead?"
        elif approval.kind in (ApprovalRequest.Kind.PUBLISH, ApprovalRequest.Kind.BUDGET):
            self.fields["comment"].help_text = "The requester reads it with your decision."
        else:
            self.fields["comment"].help_text = ("Required when you request changes; given to "
                                                "the model as guidance.")
        self.publish = publish
        if publish is not None and not publish.waiting:
            self._publish_fields(publish)

    def _publish_fields(self, publish: PublishChoice) -> None:
        from marketplace.models import Plugin

        fixed = ("Set on the plugin's page by the team's admins: a new version keeps the "
                 "plugin's listing." if publish.listing_fixed else "")
        self.fields["version"] = forms.CharField(
            max_length=64, initial=publish.initial.version, label="Version",
            help_text="Versions only go up; the suggestion is the next free one.")
        self.fields["visibility"] = forms.ChoiceField(
            choices=Plugin.Visibility.choices, initial=publish.initial.visibility,
            label="Who sees and installs it", disabled=publish.listing_fixed,
            help_text=fixed)
        self.fields["category"] = forms.ChoiceField(
            choices=Plugin.Category.choices, initial=publish.initial.category,
            label="Category", disabled=publish.listing_fixed, help_text=fixed)

    @property
    def publishes(self) -> bool:
        """Approving this form publishes with the version, visibility and category chosen."""
        return "version" in self.fields

    def publish_fields(self) -> list[forms.BoundField]:
        return [self[name] for name in PUBLISH_FIELDS if name in self.fields]

    def clean_version(self) -> str:
        text = str(self.cleaned_data.get("version") or "").strip()
        try:
            return str(Version(text))
        except InvalidVersion:
            raise forms.ValidationError("Use a version like 1.0.0 (PEP 440).") from None

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data  # what Form.clean() returns (typed Optional for subclasses)
        needs_text = data.get("decision") in (Decision.REQUEST_CHANGES, Decision.ANSWER)
        if needs_text and not (data.get("comment") or "").strip():
            self.add_error("comment", "Write what the run should do differently; the model "
                                      "reads this comment.")
        return data


class AuditFilterForm(forms.Form):
    action = forms.CharField(required=False, max_length=60, label="Action")
    actor = forms.CharField(required=False, max_length=150, label="Who")
    q = forms.CharField(required=False, max_length=100, label="Target contains")
    since = forms.DateField(required=False, label="From",
                            widget=forms.DateInput(attrs={"type": "date"}))
    until = forms.DateField(required=False, label="Until",
                            widget=forms.DateInput(attrs={"type": "date"}))

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data  # what Form.clean() returns (typed Optional for subclasses)
        if data.get("since") and data.get("until") and data["since"] > data["until"]:
            self.add_error("until", "“Until” must be on or after “From”.")
        return data
