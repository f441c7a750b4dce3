"""What the marketplace adds to a run's publish request (an "approval_extra" hook,
projects/approval_extras.py, registered by MarketplaceConfig.ready): the reviewer chooses the
version, visibility and category with the decision, approving publishes in the same step, and
the decided request's page links the version it put live."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth.models import User
from packaging.version import InvalidVersion, Version

from autocoder.engine.spec import MAX_SUMMARY_CHARS
from marketplace.models import Plugin
from marketplace.proposals import PublishChoice, publish_choice
from marketplace.selectors.versions import published_version_of_run
from marketplace.services.publishing import publish_request_approve
from marketplace.validation import PackageError
from projects.approval_extras import ChoiceRefused
from runs.models import ApprovalRequest
from runs.services.approvals import VoteOutcome


class VersionField(forms.CharField):
    """A PEP 440 version, normalised ("1.0" stays "1.0", " 2.0.0 " is "2.0.0")."""

    def clean(self, value: Any) -> str:
        text = str(super().clean(value) or "").strip()
        try:
            return str(Version(text))
        except InvalidVersion:
            raise forms.ValidationError("Use a version like 1.0.0 (PEP 440).") from None


class PublishGate:
    kind = ApprovalRequest.Kind.PUBLISH
    approve_label = "Approve and publish"

    def choice(self, approval: ApprovalRequest) -> PublishChoice | None:
        return publish_choice(approval)

    def add_fields(self, form: forms.Form, choice: PublishChoice) -> None:
        if choice.waiting:  # a version was already submitted: its combination is approved
            return
        fixed = ("Set on the plugin's page by the team's admins: a new version keeps the "
                 "plugin's listing." if choice.listing_fixed else "")
        form.fields["version"] = VersionField(
            max_length=64, initial=choice.initial.version, label="Version",
            help_text="Versions only go up; the suggestion is the next free one.")
        form.fields["visibility"] = forms.ChoiceField(
            choices=Plugin.Visibility.choices, initial=choice.initial.visibility,
            label="Who sees and installs it", disabled=choice.listing_fixed, help_text=fixed)
        form.fields["category"] = forms.ChoiceField(
            choices=Plugin.Category.choices, initial=choice.initial.category,
            label="Category", disabled=choice.listing_fixed, help_text=fixed)
        changed = (f" Version {choice.from_version}'s words: if the change changes what it "
                   "does, say so here." if choice.from_version else "")
        form.fields["summary"] = forms.CharField(  # left out or empty: the candidate's own
            max_length=MAX_SUMMARY_CHARS, initial=choice.summary, label="What it does",
            required=False,
            widget=forms.Textarea(attrs={"rows": 3}),
            help_text="The description in the marketplace, on the tool's page and in the "
                      f"README.{changed}")

    def approve(self, *, approval: ApprovalRequest, user: User,
                data: dict[str, Any]) -> VoteOutcome:
        try:
            return publish_request_approve(
                approval=approval, user=user, comment=data["comment"],
                candidate=data["candidate"], version=data["version"],
                visibility=data["visibility"], category=data["category"],
                summary=data.get("summary", ""))
        except PackageError as error:
            raise ChoiceRefused(list(error.errors)) from error

    def page(self, approval: ApprovalRequest) -> dict[str, Any]:
        """The marketplace version a decided publish request put live (None otherwise)."""
        if approval.status != ApprovalRequest.Status.APPROVED:
            return {"published": None}
        return {"published": published_version_of_run(approval.run_id)}


PUBLISH_GATE = PublishGate()
