"""The interview wizard: describe (step 1), questions (step 2), summary and Start (step 3).

Each page is one template with a `wizard` partial: htmx requests get the partial (and the new
URL pushed), plain form posts get a redirect, so the basic path needs no JavaScript.
"""

from __future__ import annotations

import logging
import threading
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import connections
from django.http import HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import NoReverseMatch, reverse
from django.views.decorators.http import require_POST
from django_htmx.http import HttpResponseClientRedirect, push_url
from redis.exceptions import RedisError

from projects.interview import (
    answers,
    checklist,
    fields,
    navigation,
    other_systems,
    samples,
    schedule,
    system_form,
    testing,
)
from projects.models import Interview
from projects.permissions import get_interview_for_editor, get_interview_for_member
from projects.selectors.interviews import questions_page, summary_view
from projects.services import interviews as services
from projects.views.broker import broker_required
from runs.models import Run
from teams.http import AuthenticatedHttpRequest, HtmxHttpRequest
from teams.models import Membership
from teams.permissions import get_team_for_member

DESCRIBE = "projects/interviews/describe.html"
QUESTIONS = "projects/interviews/questions.html"
SUMMARY = "projects/interviews/summary.html"
THINKING = "projects/interviews/thinking.html"
CLOSED = "This request has already started, so its answers can no longer change."
RENAME = "rename"  # the summary's name form, as opposed to its whole edit form
TESTING = "testing"  # the summary's form for how hard it is tested
logger = logging.getLogger(__name__)


def _render(request: HtmxHttpRequest, template: str, context: dict[str, Any]) -> HttpResponse:
    name = f"{template}#wizard" if request.htmx else template
    interview = context.get("interview")
    bound = round(services.analyst_wait_s(interview))
    # A round the requester went on without waiting for: its questions come to these pages.
    behind = interview is not None and services.analyst_still_thinking(interview)
    return render(request, name, {"analyst_bound_s": bound, "analyst_behind": behind,
                                  **context})


def _go(request: HtmxHttpRequest, url: str, page: HttpResponse | None = None) -> HttpResponse:
    """After a successful post: htmx swaps in the next page and pushes its URL; without
    JavaScript the browser follows a redirect (post/redirect/get)."""
    if request.htmx and page is not None:
        return push_url(page, url)
    return redirect(url)


def _questions_url(interview: Interview, group: int | None) -> str:
    url = reverse("interview_questions", args=[interview.pk])
    return url if group is None else f"{url}?group={group}"


def _closed(request: HtmxHttpRequest, interview: Interview) -> HttpResponse:
    messages.info(request, CLOSED)
    url = reverse("interview_summary", args=[interview.pk])
    return HttpResponseClientRedirect(url) if request.htmx else redirect(url)


# -- step 1 ---------------------------------------------------------------------------------


@login_required
def interview_new_current(request: AuthenticatedHttpRequest) -> HttpResponse:
    """The nav's "New request": the wizard for the team the user is working in."""
    team = request.team  # type: ignore[attr-defined]
    if not team:
        messages.info(request, "Join a team first: requests belong to a team.")
        return redirect("home")
    url = reverse("interview_new", args=[team.slug])
    wanted = request.GET.get("request", "").strip()  # "Request it" from a fruitless search
    return redirect(f"{url}?{urlencode({'request': wanted[:500]})}" if wanted else url)


@login_required
def interview_new(request: AuthenticatedHttpRequest, slug: str) -> HttpResponse:
    team, _ = get_team_for_member(request.user, slug)
    text = (request.POST.get("request", "") if request.method == "POST"
            else request.GET.get("request", "")[:500])
    errors = ({fields.FIELD_REQUEST: answers.request_errors(text)} if request.method == "POST"
              else {})
    if request.method == "POST" and not errors[fields.FIELD_REQUEST]:
        # With JavaScript (htmx) the analyst thinks on a page of its own, live; without, this
        # post waits for it (at most analyst_wait_s()) and says so if it gave up.
        heard = _Heard()
        interview = services.interview_create(team=team, requester=request.user,
                                              request_text=text, consult=not request.htmx,
                                              listen=heard)
        if request.htmx:
            return _thinking_response(request, interview)
        heard.tell(request, services.analyst_wait_s(interview))
        return _go(request, _questions_url(interview, None))
    context = {"team": team, "text": text, "errors": _present(errors),
               "action": reverse("interview_new", args=[team.slug])}
    return _render(request, DESCRIBE, context)


@login_required
def interview_describe(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    interview, _ = get_interview_for_editor(request.user, pk)
    if interview.is_started:
        return _closed(request, interview)
    text = request.POST.get("request", interview.request)
    errors = ({fields.FIELD_REQUEST: answers.request_errors(text)} if request.method == "POST"
              else {})
    if request.method == "POST" and not errors[fields.FIELD_REQUEST]:
        try:
            interview = services.interview_request_update(interview=interview, request_text=text)
        except services.InterviewClosed:
            return _closed(request, interview)
        group = navigation.first_open_group(interview.questions, interview.state)
        return _go(request, _questions_url(interview, group),
                   _questions_response(request, interview, group, {}))
    context = {"team": interview.team, "interview": interview, "text": text,
               "errors": _present(errors),
               "action": reverse("interview_describe", args=[interview.pk])}
    return _render(request, DESCRIBE, context)


def _present(errors: dict[str, list[str]]) -> dict[str, list[str]]:
    return {key: value for key, value in errors.items() if value}


# -- resume ---------------------------------------------------------------------------------


@login_required
def interview_detail(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    """Where a half-finished interview goes on: the step it was left at."""
    interview, membership = get_interview_for_member(request.user, pk)
    if interview.step == Interview.Step.QUESTIONS and _may_edit(request, interview, membership):
        return redirect(_questions_url(interview, None))
    if interview.step == Interview.Step.DESCRIBE and _may_edit(request, interview, membership):
        return redirect("interview_describe", pk=interview.pk)
    return redirect("interview_summary", pk=interview.pk)


def _may_edit(request: AuthenticatedHttpRequest, interview: Interview,
              membership: Membership) -> bool:
    return not interview.is_started and (
        interview.requester_id == request.user.pk or membership.can_review)


# -- step 2 ---------------------------------------------------------------------------------


@login_required
def interview_questions(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    interview, _ = get_interview_for_editor(request.user, pk)
    if interview.is_started:
        return _closed(request, interview)
    if request.method == "POST":
        return _questions_post(request, interview)
    return _questions_response(request, interview, _group_param(request.GET.get("group")), {})


def _group_param(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _questions_post(request: AuthenticatedHttpRequest, interview: Interview) -> HttpResponse:
    group = _group_param(request.POST.get("group")) or 0
    heard = _Heard()
    try:
        saved = services.interview_answers_save(
            interview=interview, question_ids=request.POST.getlist("question"),
            data=request.POST.dict(), action=request.POST.get("action", "next"),
            skip=request.POST.get("skip", ""), group=group, files=_sample_files(request),
            consult=not request.htmx, listen=heard)
    except services.InterviewClosed:
        return _closed(request, interview)
    interview.refresh_from_db()
    if saved.analyst_due:
        return _thinking_response(request, interview)
    heard.tell(request, services.analyst_wait_s(interview))
    if saved.group is not None and saved.group < 0:
        url = reverse("interview_describe", args=[interview.pk])
        page = _render(request, DESCRIBE, {"team": interview.team, "interview": interview,
                                           "text": interview.request, "errors": {},
                                           "action": url})
        return _go(request, url, page)
    if saved.group is None:
        url = reverse("interview_summary", args=[interview.pk])
        return _go(request, url, _summary_response(request, interview))
    if saved.errors or saved.group == group:
        focus = system_form.focus_after(request.POST.get("action", ""), interview.state)
        return _questions_response(request, interview, saved.group, saved.errors, focus=focus)
    return _go(request, _questions_url(interview, saved.group),
               _questions_response(request, interview, saved.group, {}))


def _questions_response(request: AuthenticatedHttpRequest, interview: Interview, group: int | None,
                        errors: dict[str, list[str]], *, focus: str = "") -> HttpResponse:
    if group is None:
        group = navigation.first_open_group(interview.questions, interview.state)
        if group is None:
            group = navigation.page_count(interview.questions,
                                          analyst_done=interview.analyst_done) - 1
    page = questions_page(interview, group, errors)
    services_form = (_services_form(interview, errors, focus)
                     if page.group == navigation.page_index(navigation.SERVICES_PAGE) else None)
    return _render(request, QUESTIONS, {"interview": interview, "team": interview.team,
                                        "page": page, "errors": errors,
                                        "services_form": services_form,
                                        "autonomy_choices": checklist.AUTONOMY_CHOICES,
                                        "recommended_autonomy": checklist.RECOMMENDED_AUTONOMY,
                                        "sample_limit": samples.SAMPLE_LIMIT_WORDS})


def _services_form(interview: Interview, errors: dict[str, list[str]],
                   focus: str = "") -> dict[str, object]:
    """The services section, with the box for the services' API documentation, and the
    question of how often it runs; `focus`: the field a row's button leaves the focus on."""
    commands = [(str(c.get("key", "")), str(c.get("name", "")))
                for c in interview.state.get("commands", [])]
    return {**system_form.form_view(interview.state, errors, focus),
            "schedule": schedule.form_view(interview.state, errors,
                                           [(name, name) for _, name in commands if name]),
            "api_docs": testing.api_docs_of(interview.state),
            "api_docs_errors": errors.get(testing.FIELD_API_DOCS, []),
            "upload_errors": errors.get(testing.FIELD_API_DOCS_UPLOAD, []),
            "api_docs_max": f"{testing.MAX_API_DOCS_CHARS:,}",
            "upload_limit": testing.API_DOCS_LIMIT_WORDS}


# -- the analyst, live ------------------------------------------------------------------------


class _Heard:
    """What the analyst did during a round, to say so (on the next page after a plain post)."""

    def __init__(self, also: services.Listener | None = None) -> None:
        self.questions: list[str] = []
        self.outcome = ""
        self.also = also

    def __call__(self, kind: str, value: str) -> None:
        if self.also is not None:
            self.also(kind, value)
        if kind == "question":
            self.questions.append(value)
        else:
            self.outcome = value

    def tell(self, request: HtmxHttpRequest, bound: float) -> None:
        if self.outcome in ("cut", "timeout"):
            messages.info(request, analyst_outcome_words(self.outcome, len(self.questions),
                                                         bound))


def analyst_outcome_words(outcome: str, questions: int, bound_s: float) -> str:
    """The analyst's round in plain words, with its bound."""
    bound = round(bound_s)
    more = f"{questions} more question{'s' if questions != 1 else ''}"
    if outcome in ("cut", "timeout") and not questions:
        return (f"The analyst model did not answer within {bound} seconds, so the wizard goes "
                "on with its usual questions alone.")
    if outcome in ("cut", "timeout"):
        return (f"The analyst model was stopped after {bound} seconds; the {more} it had "
                "written are kept.")
    if outcome == "failed":
        return "The analyst model is not available, so the wizard goes on with its usual questions."
    if questions:
        return f"The analyst added {more}; they come after the usual ones."
    return "Nothing more to ask for now."


def _thinking_response(request: HtmxHttpRequest, interview: Interview) -> HttpResponse:
    """The page shown while the analyst thinks (htmx posts only): its script starts the round
    and polls for the questions it writes meanwhile, then opens the next page."""
    return _render(request, THINKING, {
        "interview": interview, "team": interview.team,
        "analyst_url": reverse("interview_analyst", args=[interview.pk]),
        "next_url": _questions_url(interview, None)})


@login_required
def interview_analyst(request: AuthenticatedHttpRequest, pk: int) -> JsonResponse:
    """The thinking page's calls. POST starts the analyst round that is due (if any) on a
    thread of its own, which goes on after the page stops waiting (analyst_wait_s()) until
    ANALYST_LATE_S; GET (every second) reads what it has done: {"questions": written so far,
    "done": {"url", "questions", "message"} or null}."""
    interview, _ = get_interview_for_editor(request.user, pk)
    progress = services.AnalystProgress(interview.pk)
    try:
        if request.method == "POST" and progress.begin():
            threading.Thread(target=_analyst_round_in_background, args=(interview.pk, progress),
                             name=f"analyst-{interview.pk}", daemon=True).start()
        return JsonResponse(progress.read())
    except RedisError:  # no progress to show: the page goes on to the next one
        return JsonResponse({"questions": [], "done": {
            "url": _questions_url(interview, None), "questions": [], "message": ""}})


def _analyst_round_in_background(pk: int, progress: services.AnalystProgress) -> None:
    heard = _Heard(also=progress.listen)
    result: services.RoundResult = {"url": reverse("interview_questions", args=[pk]),
                                    "questions": [], "message": ""}
    wait = services.analyst_wait_s(Interview.objects.filter(pk=pk).first())
    # At the wait the page goes on; the round does not: its questions are added as they come.
    timer = threading.Timer(wait, _went_on, args=(pk, progress, heard, wait))
    timer.daemon = True
    timer.start()
    try:
        url = _analyst_round(pk, heard)
        result = {"url": url, "questions": heard.questions,
                  "message": analyst_outcome_words(heard.outcome, len(heard.questions),
                                                   services.ANALYST_LATE_S)}
    except Exception:
        logger.exception("the analyst round of interview %s failed", pk)
    finally:
        timer.cancel()
        try:
            progress.finish(result)
        except RedisError:
            logger.warning("cannot report the analyst round of interview %s", pk)
        connections.close_all()  # this thread's own


def _went_on(pk: int, progress: services.AnalystProgress, heard: _Heard, wait: float) -> None:
    written = len(heard.questions)
    so_far = f" ({written} written so far)" if written else ""
    try:
        progress.went_on({"url": reverse("interview_questions", args=[pk]),
                          "questions": list(heard.questions),
                          "message": f"The analyst model is still thinking after {round(wait)} "
                                     f"seconds, so the wizard goes on; its questions{so_far} "
                                     "are added to yours when it is done."})
    except RedisError:
        logger.warning("cannot report the analyst round of interview %s", pk)


def _analyst_round(pk: int, listen: services.Listener) -> str:
    """Run the analyst round that is due (if any) and return the next page's address."""
    interview = Interview.objects.get(pk=pk)
    if interview.is_started:
        return reverse("interview_summary", args=[pk])
    if services.interview_analyst_due(interview):
        # The requester may go on without waiting: the questions are added when they come.
        services.interview_analyst_consult(interview=interview, listen=listen, behind=True)
        interview.refresh_from_db()
    group = services.interview_advance(interview=interview, listen=listen)
    if group is None:
        return reverse("interview_summary", args=[pk])
    return _questions_url(interview, group)


# -- step 3 ---------------------------------------------------------------------------------


@login_required
def interview_summary(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    interview, membership = get_interview_for_member(request.user, pk)
    editable = _may_edit(request, interview, membership)
    if request.method == "POST":
        interview, _ = get_interview_for_editor(request.user, pk)
        if interview.is_started:
            return _closed(request, interview)
        try:
            errors = services.interview_summary_save(interview=interview,
                                                     data=request.POST.dict(),
                                                     files=_sample_files(request))
        except services.InterviewClosed:
            return _closed(request, interview)
        if request.POST.get("form") == RENAME:
            return _renamed(request, interview, errors)
        if request.POST.get("form") == TESTING:
            return _testing_saved(request, interview, errors)
        if errors:
            return _summary_response(request, interview, errors=errors, edit=True,
                                     saved=True)
        url = reverse("interview_summary", args=[interview.pk])
        messages.success(request, "Your changes are saved.")
        return _go(request, url, _summary_response(request, interview))
    edit = editable and request.GET.get("edit") == "1"
    return _summary_response(request, interview, edit=edit, editable=editable)


def _renamed(request: AuthenticatedHttpRequest, interview: Interview,
             errors: dict[str, list[str]]) -> HttpResponse:
    """The summary's names form (the plugin's name, its tasks' names, what it does): a bad
    name is refused next to its field (the rest of the summary stays as it was); a good
    plugin name is the project's name from now on."""
    own = {fields.FIELD_NAME, fields.FIELD_SUMMARY, *(
        fields.command_field(command["key"], "name")
        for command in interview.state.get("commands", []))}
    refused = {key: problems for key, problems in errors.items() if key in own and problems}
    if refused:
        return _summary_response(request, interview, errors=refused)
    url = reverse("interview_summary", args=[interview.pk])
    if request.htmx:  # said next to the field; a flash message would wait for the next page
        return push_url(_summary_response(request, interview, renamed=True), url)
    messages.success(request, f"The name is now \u201c{interview.state['name']}\u201d.")
    return redirect(url)


def _testing_saved(request: AuthenticatedHttpRequest, interview: Interview,
                   errors: dict[str, list[str]]) -> HttpResponse:
    """The summary's testing form: bad numbers are refused next to their fields, kept as typed
    (the rest of the request is untouched); good ones are saved and said so."""
    own = {key: errors[key] for key in (testing.FIELD_THRESHOLD, testing.FIELD_ITERATIONS)
           if errors.get(key)}
    if own:
        return _summary_response(request, interview, errors=own)
    url = reverse("interview_summary", args=[interview.pk])
    if request.htmx:
        return push_url(_summary_response(request, interview, testing_saved=True), url)
    messages.success(request, "Saved: how hard it is tested.")
    return redirect(url)


def _summary_response(request: AuthenticatedHttpRequest, interview: Interview, *,
                      errors: dict[str, list[str]] | None = None, edit: bool = False,
                      editable: bool = True, saved: bool = False, renamed: bool = False,
                      testing_saved: bool = False) -> HttpResponse:
    context = {"interview": interview, "team": interview.team, "renamed": renamed,
               "view": summary_view(interview, errors), "errors": errors or {},
               "services": _services_lines(interview),
               "schedule": schedule.summary_lines(interview.state),
               "testing": testing.form_view(interview.state, errors or {}),
               "testing_saved": testing_saved,
               "services_url": _questions_url(
                   interview, navigation.page_index(navigation.SERVICES_PAGE)) + "#svc-uses",
               "edit": edit, "editable": editable and not interview.is_started,
               "saved": saved, "autonomy_choices": checklist.AUTONOMY_CHOICES,
               "recommended_autonomy": checklist.RECOMMENDED_AUTONOMY,
               "sample_limit": samples.SAMPLE_LIMIT_WORDS,
               "run": interview.project.runs.order_by("-created_at").first(),
               "run_url": _run_url(interview),
               "analyst_open": sum(1 for q in interview.questions
                                   if q.get("source") == "analyst"
                                   and checklist.is_open(q, interview.state))}
    return _render(request, SUMMARY, context)


def _services_lines(interview: Interview) -> list[tuple[str, str]]:
    lines = other_systems.summary_lines(interview.state)
    docs = testing.spec_api_docs(interview.state)
    if other_systems.talks_to_service(interview.state):
        lines.append(("Its API documentation", f"given ({len(docs):,} characters): the model "
                      "reads it while writing the tool" if docs else "not given"))
    return lines


@login_required
@require_POST
@broker_required
def interview_start(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    interview, _ = get_interview_for_editor(request.user, pk)
    if interview.is_started:
        return _closed(request, interview)
    try:
        run = services.interview_start(interview=interview, user=request.user)
    except services.InterviewClosed:
        return _closed(request, interview)
    except services.InterviewInvalid as invalid:
        return _summary_response(request, interview, errors=invalid.errors, edit=True)
    if run.status == Run.Status.HELD:
        # The run page says why in plain words (the fault's headline); no "Started" here.
        messages.info(request, "Your request is saved.")
    else:
        messages.success(request, "Started. You can follow its progress here; reviewers are "
                                  "told when something needs their approval.")
    url = _run_url(interview, run) or reverse("interview_summary", args=[interview.pk])
    return HttpResponseClientRedirect(url) if request.htmx else redirect(url)


def _sample_files(request: HtmxHttpRequest) -> dict[str, samples.SampleFile]:
    """The files attached to examples; one over the size limit is refused without reading it."""
    files = {}
    for field, uploads in request.FILES.lists():
        upload = uploads[-1]
        size = upload.size or 0
        limit = (testing.MAX_API_DOCS_BYTES if field == testing.FIELD_API_DOCS_UPLOAD
                 else samples.MAX_SAMPLE_BYTES)
        content = upload.read() if size <= limit else b""
        files[field] = samples.SampleFile(name=upload.name or "", size=size, content=content)
    return files


def _run_url(interview: Interview, run: Run | None = None) -> str:
    """The run's live page once it exists (the portal's run view), else ""."""
    run = run or interview.project.runs.order_by("-created_at").first()
    if run is None:
        return ""
    try:
        return reverse("run_detail", args=[run.pk])
    except NoReverseMatch:
        return ""
