"""Change requests: someone asks for a plugin to behave differently where they saw the
problem; the owning team starts a change run from the version in use (runs/services/changes.py
`change_project_create`, with the cases that have an expected answer as its examples) or
declines with a reason. The asker is told at each step (the bell), the owning team's
reviewers when a request arrives; each step is in the owning team's audit log."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser, User
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from marketplace.models import Plugin, PluginVersion
from runs.models import Project
from teams.models import Membership, Team
from teams.services.audit import audit_record
from teams.services.notifications import (
    decision_message,
    notification_decided_send,
    notifications_review_requested,
    notifications_review_settled,
)
from tools.change_selectors import may_decide_change
from tools.json_input import JsonInputError, json_input_parse, json_input_problem
from tools.models import ChangeRequest, Invocation
from tools.services.change_questions import follow_up_for_run, follow_up_queue

Status = ChangeRequest.Status
MAX_CASES = 20
MAX_TEXT = 5000


class ChangeRequestError(ValueError):
    """A request that cannot be made or decided; `str()` says why in plain words, `field`
    names the form field it is about ("" for the whole form)."""

    def __init__(self, message: str, *, field: str = "") -> None:
        super().__init__(message)
        self.field = field


def expected_parse(text: str, *, field: str = "expected") -> tuple[bool, Any]:
    """(given, value) of what someone expected: nothing; JSON (an object, a list, a number,
    true/false/null, a "quoted" text); or plain words. Text that starts as JSON does ({, [ or
    ") must be valid JSON: a typo there is an error, not words."""
    words = text.strip()
    if not words:
        return False, None
    try:
        return True, json_input_parse(words)
    except JsonInputError as exc:
        if words[0] in "{[\"":
            raise ChangeRequestError(
                f"What you expected starts like JSON but is not valid JSON: {exc} Correct it, "
                "or write it in plain words.", field=field) from None
    if len(words) > MAX_TEXT:
        raise ChangeRequestError(f"Please keep what you expected under {MAX_TEXT} characters.",
                                 field=field)
    return True, words


def input_parse(text: str, *, field: str = "input") -> dict[str, object]:
    """A case's input: a JSON object ({} when empty)."""
    if not text.strip():
        return {}
    try:
        value = json_input_parse(text)
    except JsonInputError as exc:
        raise ChangeRequestError(f"The input is not valid JSON: {exc}", field=field) from None
    if not isinstance(value, dict):
        raise ChangeRequestError('The input must be a JSON object, like {"text": "hi"}.',
                                 field=field)
    return value


def _url(request: ChangeRequest, anchor: str = "") -> str:
    return reverse("tools:change", args=[request.pk]) + (f"#{anchor}" if anchor else "")


def _reviewers(team: Team, except_id: int | None) -> list[User]:
    return [m.user for m in Membership.objects.filter(team=team).select_related("user")
            if m.can_review and m.user_id != except_id]


def _clean_cases(cases: list[dict[str, object]]) -> list[dict[str, object]]:
    if len(cases) > MAX_CASES:
        raise ChangeRequestError(f"At most {MAX_CASES} examples in one request.")
    found: list[dict[str, object]] = []
    for case in cases:
        problem = json_input_problem(case)
        if problem is not None:
            raise ChangeRequestError(problem, field="input")
        found.append({key: case[key] for key in ("command", "input", "got", "failed",
                                                 "expected", "expected_words") if key in case})
    return found


def change_request_create(*, user: AbstractBaseUser, plugin: Plugin, from_team: Team,
                          version: PluginVersion, description: str, keep: str = "",
                          cases: list[dict[str, object]] | None = None,
                          invocation: Invocation | None = None) -> ChangeRequest:
    """Ask the team that owns `plugin` for a change (the caller checked that the user sees the
    plugin and may ask from `from_team`: selectors `asking_teams`)."""
    description = description.strip()
    if not description:
        raise ChangeRequestError("Say in a few words what should be different.",
                                 field="description")
    if len(description) > MAX_TEXT or len(keep) > MAX_TEXT:
        raise ChangeRequestError(f"Please keep each text under {MAX_TEXT} characters.",
                                 field="description")
    with transaction.atomic():
        request = ChangeRequest.objects.create(
            team_id=plugin.team_id, plugin=plugin, version=version, asked_by_id=user.pk,
            from_team=from_team, description=description, keep=keep.strip(),
            cases=_clean_cases(cases or []), invocation=invocation)
        follow_up_queue(request)  # the analyst's few questions, if any (docs/tools.md)
        owner = request.team
        audit_record(actor=user, action="tool.change_asked", team=owner, target=request,
                     target_repr=f"{plugin.name} {version.version}",
                     after={"from_team": from_team.slug, "cases": len(request.cases)})
        asker = getattr(user, "get_username", lambda: "someone")()
        where = "" if from_team.pk == owner.pk else f" (team {from_team.name})"
        notifications_review_requested(
            team=owner, users=_reviewers(owner, user.pk), url=_url(request),
            message=f"{asker}{where} asks for a change of {plugin.name}: {description}")
    return request


def _check_open(request: ChangeRequest, user: AbstractBaseUser) -> None:
    refusal = may_decide_change(user, request)
    if refusal:
        raise ChangeRequestError(refusal)
    if request.status != Status.OPEN:
        raise ChangeRequestError(f"This request was {request.get_status_display().lower()} "
                                 "already.")


def change_request_start(*, request: ChangeRequest, user: User,
                         expected: dict[int, str] | None = None,
                         behaviour_changes: bool = False) -> ChangeRequest:
    """Start a change run from the request's version: `expected` fills in, by case number,
    what a case lacked; the cases with an expected answer become the run's examples.
    `behaviour_changes`: the reviewer says the request changes what the tool does today, so
    the version's tests may change with it (runs/services/changes.py)."""
    from runs.services.changes import change_project_create

    with transaction.atomic():
        request = ChangeRequest.objects.select_for_update(of=("self",)).select_related(
            "team", "plugin", "version", "asked_by", "from_team").get(pk=request.pk)
        _check_open(request, user)
        cases = [dict(case) for case in request.cases]
        for number, text in (expected or {}).items():
            if 0 <= number < len(cases) and "expected" not in cases[number]:
                given, value = expected_parse(text, field=f"expected-{number}")
                if given:
                    cases[number]["expected"] = value
        examples = [_run_case(case) for case in cases]
        asker_in_team = request.asked_by_id is not None and Membership.objects.filter(
            team=request.team, user_id=request.asked_by_id).exists()
        try:
            project = change_project_create(
                team=request.team,
                requester=request.asked_by if asker_in_team and request.asked_by else user,
                base_name=request.plugin.name, base_version=request.version.version,
                base_files=dict(request.version.files), cases=examples, autonomy="semi",
                behaviour_changes=behaviour_changes, **follow_up_for_run(request))
        except ValueError as exc:
            raise ChangeRequestError(str(exc), field="expected") from None
        request.cases = cases
        request.status, request.project = Status.STARTED, project
        request.decided_by, request.decided_at = user, timezone.now()
        request.save(update_fields=["cases", "status", "project", "decided_by", "decided_at"])
        audit_record(actor=user, action="tool.change_started", team=request.team,
                     target=request, target_repr=_repr(request),
                     after={"project": project.pk,
                            "examples": sum("expected" in case for case in cases)})
        _settle(request)
        notification_decided_send(
            user_id=request.asked_by_id, team_id=request.from_team_id, actor=user,
            url=_url(request, "started"),
            message=f"{user.get_username()} started a change run for your request about "
                    f"{request.plugin.name}.")
    return request


def _run_case(case: dict[str, object]) -> dict[str, object]:
    """A case as the change run takes it: the ones with an expected answer become its tests;
    what the version answered (or the error's words) tells the model what is wrong."""
    found: dict[str, object] = {"command": case.get("command", ""), "input": case.get("input", {})}
    if "expected" in case:
        found["expected"] = case["expected"]
    if case.get("expected_words"):
        found["expected_words"] = case["expected_words"]
    if case.get("got") is not None:
        found["got"] = f"an error: {case['got']}" if case.get("failed") else case["got"]
    return found


def change_request_decline(*, request: ChangeRequest, user: User, reason: str
                           ) -> ChangeRequest:
    """Decline with a reason the asker reads."""
    reason = reason.strip()
    if not reason:
        raise ChangeRequestError("Say why, for whoever asked.", field="reason")
    with transaction.atomic():
        request = ChangeRequest.objects.select_for_update(of=("self",)).select_related(
            "team", "plugin").get(pk=request.pk)
        _check_open(request, user)
        request.status, request.decline_reason = Status.DECLINED, reason[:MAX_TEXT]
        request.decided_by, request.decided_at = user, timezone.now()
        request.save(update_fields=["status", "decline_reason", "decided_by", "decided_at"])
        audit_record(actor=user, action="tool.change_declined", team=request.team,
                     target=request, target_repr=_repr(request),
                     after={"reason": request.decline_reason})
        _settle(request)
        notification_decided_send(
            user_id=request.asked_by_id, team_id=request.from_team_id, actor=user,
            url=_url(request, "declined"),
            message=decision_message(actor=user, what=f"your change request about "
                                                      f"{request.plugin.name}",
                                     outcome="declined", comment=reason))
    return request


def _repr(request: ChangeRequest) -> str:
    return f"{request.plugin.name} (change request {request.pk})"


def _settle(request: ChangeRequest) -> None:
    notifications_review_settled(team_id=request.team_id, url=_url(request))


def change_request_shipped(project: Project) -> int:
    """The change run of `project` published its version: its requests are shipped and their
    askers told. Returns how many requests it settled. Not called yet: the step that
    publishes a change run's version is to call it."""
    shipped = 0
    with transaction.atomic():
        for request in (ChangeRequest.objects.select_for_update(of=("self",))
                        .select_related("plugin", "decided_by", "team")
                        .filter(project=project, status=Status.STARTED)):
            request.status, request.shipped_at = Status.SHIPPED, timezone.now()
            request.save(update_fields=["status", "shipped_at"])
            audit_record(actor=None, action="tool.change_shipped", team=request.team,
                         target=request, target_repr=_repr(request),
                         after={"project": project.pk})
            # Told by whoever started the run (nobody is told of their own doing).
            actor = request.decided_by or project.requester
            notification_decided_send(
                user_id=request.asked_by_id, team_id=request.from_team_id, actor=actor,
                url=_url(request, "shipped"),
                message=f"The change you asked for is out: a new version of "
                        f"{request.plugin.name} is published. Your team's admins upgrade it "
                        "from the tools page.")
            shipped += 1
    return shipped
