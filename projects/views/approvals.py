"""Approval screens: the inbox of what waits for my decision and the review page of one request."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from projects.approval_extras import ChoiceRefused, approval_extra
from projects.approval_forms import ApprovalDecisionForm, decision_cast, decision_form
from projects.approval_services import other_services
from projects.diffs import unified_rows
from projects.permissions import get_approval_for_member
from projects.selectors.asked import asked_for
from projects.selectors.inbox import inbox_page
from projects.selectors.interviews import readable
from projects.views.broker import broker_required
from runs import approval_rules as rules
from runs.models import ApprovalRequest
from runs.selectors.approvals import review_material, who_decides
from runs.selectors.changes import change_facts
from runs.selectors.runs import reply_cuts
from teams.http import AuthenticatedHttpRequest
from teams.models import Membership
from teams.selectors import request_memberships
from teams.selectors.teams import teams_for_user

PAGE_SIZE = 25


@login_required
def approval_list(request: AuthenticatedHttpRequest) -> HttpResponse:
    """Everything waiting for the user's decision (run gates and uploaded versions), then what
    was decided lately."""
    page = inbox_page(request.user, request.GET.get("page"), per_page=PAGE_SIZE,
                      memberships=request_memberships(request))
    decided = (ApprovalRequest.objects
               .filter(project__team__in=teams_for_user(request.user))
               .exclude(status=ApprovalRequest.Status.PENDING)
               .select_related("project", "decided_by").order_by("-decided_at", "-id")[:15])
    return render(request, "projects/approval_list.html", {"page": page, "decided": decided})


@login_required
def approval_detail(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    approval, membership = get_approval_for_member(request.user, pk)
    form = decision_form(approval, initial={"candidate": rules.approval_candidate(approval)})
    return _render(request, approval, membership, form)


@login_required
@require_POST
@broker_required
def approval_decide(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    approval, membership = get_approval_for_member(request.user, pk)
    form = decision_form(approval, request.POST)
    if not form.is_valid():
        return _render(request, approval, membership, form, status=400)
    try:
        outcome = decision_cast(approval=approval, user=request.user, form=form)
    except rules.MayNotDecide as error:
        # The page says why (the same words as every other door), with no form to send again.
        return _render(request, approval, membership, form, status=403, refused=str(error))
    except rules.ApprovalRefused as error:
        # The page shows the current candidate with what the reviewer typed, ready to send again
        # once they have looked at it: a refused decision loses nothing.
        approval.refresh_from_db()
        data = request.POST.copy()
        data["candidate"] = rules.approval_candidate(approval)
        form = decision_form(approval, data)
        form.is_valid()
        form.add_error(None, str(error))
        return _render(request, approval, membership, form, status=409, refused=str(error))
    except ChoiceRefused as error:
        # The plugin cannot be published as chosen (a version already taken, a name of another
        # team...): nothing was decided; the reviewer corrects the choice or rejects.
        for problem in error.errors:
            form.add_error(None, problem)
        return _render(request, approval, membership, form, status=400)
    messages.success(request, outcome.message)
    return redirect("approval_detail", pk=approval.pk)


def _render(request: AuthenticatedHttpRequest, approval: ApprovalRequest, membership: Membership,
            form: ApprovalDecisionForm, status: int = 200, refused: str = "") -> HttpResponse:
    """The review page; `refused`: why the decision just sent was refused (shown where the
    form would be when there is no form to show it in)."""
    context = {**_context(request, approval, membership, form), "refused": refused}
    return render(request, "projects/approval_detail.html", context, status=status)


def _context(request: AuthenticatedHttpRequest, approval: ApprovalRequest, membership: Membership,
             form: ApprovalDecisionForm) -> dict[str, object]:
    material = review_material(approval, against=request.GET.get("against"))
    team = approval.project.team
    tally = rules.approval_tally(approval, team=team)
    refusal = rules.gate_refusal(membership=membership, approval=approval)
    is_pending = approval.status == ApprovalRequest.Status.PENDING
    diff = (unified_rows(material.against.files if material.against else {},
                         material.iteration.files) if material.iteration else None)
    extra = approval_extra(approval.kind)
    return {
        **(extra.page(approval) if extra else {}),
        "who_decides": who_decides(deciders=rules.gate_deciders(approval), team_name=team.name,
                                   thing="request", viewer_id=request.user.pk,
                                   author=approval.project.requester)
        if refusal and is_pending else "",
        "approval": approval, "project": approval.project, "run": approval.run, "team": team,
        "payload": approval.payload or {}, "material": material, "diff": diff, "tally": tally,
        "my_vote": next((v for v in tally.votes if v.user_id == request.user.pk), None),
        "may_decide": not refusal, "refusal": refusal,
        "is_pending": is_pending, "form": form,
        "outcomes": material.test_report.get("outcomes") or [],
        "other_services": other_services(approval, material.iteration),
        **_what_it_decides(approval, material.iteration),
    }


def _what_it_decides(approval: ApprovalRequest, iteration: Any) -> dict[str, object]:
    """What the request is checked against: what was asked, what a change run changes (with
    its cases readable), and the replies of the attempt the model's length limit cut short."""
    change = change_facts(approval, approval.run, iteration)
    cases = [{**case, "input": readable(case.get("input") or {}, named=True),
              "expected": readable(case.get("expected"),
                                   named=isinstance(case.get("expected"), dict))}
             for case in (change.cases if change else [])]
    return {"asked": asked_for(approval.project), "change": change, "cases": cases,
            "cuts": reply_cuts(approval.run, approval.iteration)}
