"""Forms of the review side: a decision on an approval request, the audit log's filters."""

from __future__ import annotations

from typing import Any, cast

from django import forms
from django.contrib.auth.models import User

from projects.approval_extras import ApprovalExtra, approval_extra
from runs.approval_rules import decisions_allowed
from runs.models import ApprovalRequest, ApprovalVote
from runs.services.approvals import VoteOutcome, approval_vote_cast
from runs.services.outbox import Dispatch, enqueue_step

Decision = ApprovalVote.Decision
LABELS = {
    Decision.APPROVE: "Approve",
    Decision.REJECT: "Reject",
    Decision.REQUEST_CHANGES: "Request changes (your comment goes into the next prompt)",
    Decision.ANSWER: "Answer with guidance (the run continues with your advice)",
}
ESCALATION_LABELS = {Decision.REJECT: "Stop the run"}
# A plan is never the end of a run: rejecting it plans again (runs/services/deciding.py).
PLAN_LABELS = {
    Decision.REQUEST_CHANGES: "Request changes (the run plans again with your comment)",
    Decision.REJECT: "Reject the plan (the run plans again; your comment is its guidance)",
}
ORDER = [Decision.APPROVE, Decision.ANSWER, Decision.REQUEST_CHANGES, Decision.REJECT]
# What deciding does, said above the choices (runs/services/deciding.py does it).
DECISION_OUTCOMES: dict[str, str] = {
    ApprovalRequest.Kind.PLAN: "Approving lets the run write the code. Rejecting or asking for "
                               "changes sends it back to planning, with your comment.",
    ApprovalRequest.Kind.CHANGE: "Approving lets the run go on. Asking for changes sends the "
                                 "code back with your comment; rejecting stops the run.",
    ApprovalRequest.Kind.ESCALATION: "Answering lets the run go on with your guidance; "
                                     "stopping ends it.",
    ApprovalRequest.Kind.PUBLISH: "Approving publishes the plugin; rejecting leaves it "
                                  "unpublished.",
    ApprovalRequest.Kind.BUDGET: "Continuing lets the run go on; stopping ends it.",
}


def budget_labels(approval: ApprovalRequest) -> dict[Decision, str]:
    """"Continue with 2.00 USD more" / "Stop the run": the question the request asks."""
    budget = (approval.payload or {}).get("budget") or {}
    more = f"{budget.get('more', '')} {budget.get('currency', '')}".strip()
    return {Decision.APPROVE: f"Continue with {more} more" if more else "Continue",
            Decision.REJECT: "Stop the run"}


class ApprovalDecisionForm(forms.Form):
    decision = forms.ChoiceField(widget=forms.RadioSelect, label="Your decision")
    comment = forms.CharField(widget=forms.Textarea(attrs={"rows": 4}), required=False,
                              max_length=4000, label="Comment")
    candidate = forms.CharField(widget=forms.HiddenInput)

    def __init__(self, *args: Any, approval: ApprovalRequest, extra: ApprovalExtra | None = None,
                 choice: Any = None, **kwargs: Any) -> None:
        """`extra`, `choice`: what an app adds to this kind of request and what approving
        chooses (for a run's publish request: the version, visibility and category, chosen
        here with the decision, in one step; projects/approval_extras.py)."""
        super().__init__(*args, **kwargs)
        allowed = decisions_allowed(approval.kind)
        labels: dict[Decision, str] = {}
        if approval.kind == ApprovalRequest.Kind.ESCALATION:
            labels = ESCALATION_LABELS
        elif approval.kind == ApprovalRequest.Kind.PLAN:
            labels = PLAN_LABELS
        elif approval.kind == ApprovalRequest.Kind.BUDGET:
            labels = budget_labels(approval)
        elif extra is not None and choice is not None:
            labels = {Decision.APPROVE: extra.approve_label}
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
        self.outcomes = DECISION_OUTCOMES.get(approval.kind, "")
        self.extra = extra
        self.choice = choice
        fields_before = set(self.fields)
        if extra is not None and choice is not None:
            extra.add_fields(self, choice)
        self.choice_names = [name for name in self.fields if name not in fields_before]

    @property
    def publishes(self) -> bool:
        """Approving this form also carries out what is chosen in its extra fields (publishes
        with the version, visibility and category chosen)."""
        return bool(self.choice_names)

    def publish_fields(self) -> list[forms.BoundField]:
        return [self[name] for name in self.choice_names]

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data  # what Form.clean() returns (typed Optional for subclasses)
        needs_text = data.get("decision") in (Decision.REQUEST_CHANGES, Decision.ANSWER)
        if needs_text and not (data.get("comment") or "").strip():
            self.add_error("comment", "Write what the run should do differently; the model "
                                      "reads this comment.")
        return data


def decision_form(approval: ApprovalRequest, data: Any = None,
                  **kwargs: Any) -> ApprovalDecisionForm:
    """The decision form of `approval`; a pending publish request's also chooses what approving
    publishes (what an app adds to a kind of request: projects/approval_extras.py). The review
    page and `manage.py approve` both decide through it."""
    extra = approval_extra(approval.kind)
    pending = approval.status == ApprovalRequest.Status.PENDING
    choice = extra.choice(approval) if extra and pending else None
    return ApprovalDecisionForm(data, approval=approval, extra=extra, choice=choice, **kwargs)


def decision_cast(*, approval: ApprovalRequest, user: User, form: ApprovalDecisionForm,
                  dispatch: Dispatch | None = enqueue_step) -> VoteOutcome:
    """Carry out a valid decision form: approving a form with a choice does what its extra
    does (a run's publish request: submit the version and publish it, in one step), anything
    else is a vote. Raises what the approval rules and the extra raise (ApprovalRefused,
    ChoiceRefused). `dispatch` as in approval_vote_cast (a publish request moves no run)."""
    data = form.cleaned_data
    if form.extra and form.publishes and data["decision"] == Decision.APPROVE:
        return form.extra.approve(approval=approval, user=user, data=data)
    return approval_vote_cast(approval=approval, user=user, decision=data["decision"],
                              comment=data["comment"], candidate=data["candidate"],
                              dispatch=dispatch)


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
