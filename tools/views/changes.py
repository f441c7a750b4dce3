"""Pages of change requests: "Ask for a change" (from a tool's page, a call in its log, a
result, or the plugin's marketplace page), a request's page (the owning team starts a change
run or declines; the asker's side reads its status) and a team's list. Access: what the
person may not see is 404 (tools/change_selectors.py); decisions through
tools/services/changes.py."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from teams.http import AuthenticatedHttpRequest
from teams.models import Team
from teams.permissions import get_team_for_member
from tools import change_selectors as selectors
from tools.change_forms import ChangeDecisionForm
from tools.declared import command_names
from tools.models import ChangeRequest
from tools.services import change_questions, changes
from tools.services.changes import ChangeRequestError


def _team_of(teams: list[Team], slug: str) -> Team:
    for team in teams:
        if team.slug == slug:
            return team
    if slug:
        raise Http404("No such team")
    return teams[0]


@login_required
@require_http_methods(["GET", "POST"])
def change_ask(request: AuthenticatedHttpRequest, name: str) -> HttpResponse:
    """The form: what should be different, what must stay, and an example (a call's input and
    answer when asked from a call, with what the person expected instead)."""
    plugin = selectors.plugin_for_asking(request.user, name)
    teams = selectors.asking_teams(request.user, plugin)
    if not teams:
        raise PermissionDenied("Join a team first: a request comes from a team.")
    data = request.POST if request.method == "POST" else request.GET
    team = _team_of(teams, data.get("team", ""))
    call = None
    if data.get("invocation", "").isdigit():
        call = selectors.call_case(team, plugin, int(data["invocation"]), request.user.pk)
    version = (call.invocation.version if call is not None
               else selectors.version_in_use(team, plugin, data.get("version", "")))
    values = {"description": "", "keep": "", "command": call.invocation.command if call else "",
              "input": selectors.shown_value(call.input) if call and call.input else "", "got": "",
              "expected": ""}
    errors: dict[str, str] = {}
    if request.method == "POST":
        values.update({key: request.POST.get(key, "") for key in values
                       if not (call and key == "command")})
        try:
            made = changes.change_request_create(
                user=request.user, plugin=plugin, from_team=team, version=version,
                description=values["description"], keep=values["keep"],
                cases=_asked_cases(values, call), invocation=call.invocation if call else None)
        except ChangeRequestError as exc:
            errors[exc.field or "description"] = str(exc)
        else:
            owner = "your team's reviewers" if plugin.team_id == team.pk else (
                f"the team that makes {plugin.name}")
            messages.success(request, f"Sent to {owner}. You will be told when they start "
                                      "a change or decline it.")
            return redirect("tools:change", made.pk)
    return render(request, "tools/change_ask.html", {
        "plugin": plugin, "version": version, "teams": teams, "team": team, "call": call,
        "got": selectors.shown_value(call.got) if call is not None and call.got is not None else "",
        "commands": command_names(version), "values": values, "errors": errors,
        "outsider": plugin.team_id != team.pk}, status=400 if errors else 200)


def _asked_cases(values: dict[str, str], call: selectors.CallCase | None
                 ) -> list[dict[str, object]]:
    """The example of the form as a case (none when nothing of it was filled in)."""
    given, expected = changes.expected_parse(values["expected"])
    case_input = changes.input_parse(values["input"])
    if call is not None:
        case: dict[str, object] = {"command": call.invocation.command, "input": case_input,
                                "got": call.got, "failed": call.failed}
    elif values["input"].strip() or given:
        if not values["command"]:
            raise ChangeRequestError("Choose the command the example is for.", field="command")
        case = {"command": values["command"], "input": case_input,
                "got": values["got"].strip() or None, "failed": False}
    else:
        return []
    if given:
        # Plain words ("March should be 412.50") say what was expected; only an answer written
        # as JSON is the answer itself. Words go to the reviewer, who writes the exact answer.
        words = isinstance(expected, str) and not values["expected"].strip().startswith('"')
        case["expected_words" if words else "expected"] = expected
    return [case]


@login_required
@require_http_methods(["GET", "POST"])
def change_detail(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    found, owner_side = selectors.change_request_for_viewer(request.user, pk)
    refusal = selectors.may_decide_change(request.user, found) if owner_side else ""
    form = ChangeDecisionForm(request.POST if request.method == "POST" else None)
    errors: dict[str, str] = {}
    if request.method == "POST":
        try:
            said = _decided(request, found, owner_side, form)
        except (change_questions.FollowUpError, ChangeRequestError) as exc:
            errors[getattr(exc, "field", "") or _error_key(form)] = str(exc)
        else:
            messages.success(request, said)
            return redirect("tools:change", found.pk)
    answers, deciding = form.answers(), form.chosen() not in ("answer", "ask_again")
    owner_post = request.method == "POST" and owner_side and deciding
    typed = form.expected() if owner_post else {}
    status = (403 if refusal and deciding else 400) if errors else 200
    return render(request, "tools/change_detail.html", {
        "change": found, "owner_side": owner_side, "refusal": refusal,
        "run": selectors.change_run_shown(found, owner_side),
        "cases": selectors.case_rows(found, typed, errors), "errors": errors,
        "reason": form.cleaned_data["reason"] if owner_post else "",
        "behaviour_changes": owner_post and form.cleaned_data["behaviour_changes"],
        "expected_error_numbers": [key for key in errors if key.startswith("expected-")],
        "open": found.status == ChangeRequest.Status.OPEN,
        "questions": [{**q, "number": n, "typed": answers.get(n, "")}
                      for n, q in enumerate(found.questions)],
        "may_answer": change_questions.may_answer(request.user, found),
        "shipped": selectors.shipped_state(found)
        if found.status == ChangeRequest.Status.SHIPPED else None,
        "follow_up_stalled": change_questions.follow_up_stalled(found)}, status=status)


def _error_key(form: ChangeDecisionForm) -> str:
    return "answers" if form.chosen() in ("answer", "ask_again") else "decision"


def _decided(request: AuthenticatedHttpRequest, found: ChangeRequest, owner_side: bool,
             form: ChangeDecisionForm) -> str:
    """Carry out the page's decision; what the page then says (FollowUpError or
    ChangeRequestError in words: the page shows it, nothing typed is lost)."""
    decision, user = form.chosen(), request.user
    if decision in ("answer", "ask_again"):
        try:
            if decision == "answer":
                change_questions.follow_up_answer(request=found, user=user,
                                                  answers=form.answers())
                return ("Thank you. The change spec is being written from the answers; this"
                        " page shows it when it is ready.")
            change_questions.follow_up_retry(request=found, user=user)
            return "The analyst is reading the request again."
        except change_questions.FollowUpError as exc:
            if not change_questions.may_answer(user, found):
                raise PermissionDenied(str(exc)) from None
            raise
    if not owner_side:
        raise Http404("No such change request")
    if decision == "start":
        changes.change_request_start(request=found, user=user, expected=form.expected(),
                                     behaviour_changes=form.cleaned_data["behaviour_changes"])
        return "The change run started. Whoever asked has been told."
    if decision == "decline":
        changes.change_request_decline(request=found, user=user,
                                       reason=form.cleaned_data["reason"])
        return "Declined. Whoever asked has been told why."
    raise ChangeRequestError("Choose: start a change run, or decline.")


@login_required
def change_list(request: AuthenticatedHttpRequest, slug: str) -> HttpResponse:
    team, _ = get_team_for_member(request.user, slug)
    return render(request, "tools/change_list.html", {
        "team": team, **selectors.team_change_requests(team, request.user)})

