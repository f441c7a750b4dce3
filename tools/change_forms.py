"""The forms of a change request's page (tools/views/changes.py): what was decided, and the
numbered fields the page writes, one per case (`expected-<n>`) and per question (`answer-<n>`)."""

from __future__ import annotations

from collections.abc import Mapping

from django import forms

DECISIONS = ("answer", "ask_again", "start", "decline")


def numbered(data: Mapping[str, str], prefix: str) -> dict[int, str]:
    """{n: value} of the fields named `<prefix>-<n>`."""
    found: dict[int, str] = {}
    for key in data:
        head, _, number = key.partition("-")
        if head == prefix and number.isdigit():
            found[int(number)] = str(data.get(key, ""))
    return found


class ChangeDecisionForm(forms.Form):
    """One POST of the page: answering the analyst's questions, asking it again, or (the owning
    team) starting a change run with the expected answers typed, or declining with a reason.
    A decision that is none of these is the services' to refuse in words."""

    decision = forms.CharField(required=False)
    reason = forms.CharField(required=False, strip=False)
    behaviour_changes = forms.BooleanField(required=False)

    def answers(self) -> dict[int, str]:
        return numbered(self.data, "answer")

    def expected(self) -> dict[int, str]:
        return numbered(self.data, "expected")

    def chosen(self) -> str:
        return str(self.cleaned_data.get("decision") or "") if self.is_valid() else ""
