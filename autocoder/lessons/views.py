"""Pages for lessons: browse, search, view, edit, retire/restore and promote to global."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import NoReverseMatch, reverse
from django.views.decorators.http import require_POST

from autocoder.lessons import selectors, services
from autocoder.lessons.embedder import EmbedderError
from autocoder.lessons.forms import LessonForm, SearchForm
from autocoder.lessons.models import Lesson
from autocoder.lessons.permissions import (
    can_curate,
    can_promote,
    get_lesson_for_curator,
    get_lesson_for_viewer,
)
from teams.models import Team
from teams.permissions import get_team_for_member

PAGE_SIZE = 20
# URL names the engine's run page may get; until one exists the lesson page prints the path.
RUN_URL_NAMES = ("run_detail", "projects:run_detail", "runs:detail")


def _scope_team(request: HttpRequest) -> Team | None:
    """The team whose lessons are shown: ?team=<slug> (members only) or the current team."""
    slug = request.GET.get("team", "")
    if slug:
        return get_team_for_member(request.user, slug)[0]
    team = getattr(request, "team", None)
    return team if team else None


def _page(request: HttpRequest, items: Any) -> Any:
    return Paginator(items, PAGE_SIZE).get_page(request.GET.get("page"))


def _template(request: HttpRequest, name: str, partial: str) -> str:
    return f"{name}#{partial}" if getattr(request, "htmx", False) else name


@login_required
def lesson_list(request: HttpRequest) -> HttpResponse:
    team = _scope_team(request)
    kind = request.GET.get("kind", "") if request.GET.get("kind") in Lesson.Kind.values else ""
    tag, retired = request.GET.get("tag", "").strip(), request.GET.get("status") == "retired"
    lessons = selectors.lessons_browse(team_id=team.pk if team else None, kind=kind, tag=tag,
                                       retired=retired)
    context = {"team": team, "page": _page(request, lessons), "kind": kind, "tag": tag,
               "retired": retired, "kinds": Lesson.Kind.choices,
               "tags": selectors.lesson_tags(team_id=team.pk if team else None)}
    return render(request, _template(request, "lessons/list.html", "results"), context)


def _search(team: Team | None, form: SearchForm) -> tuple[list[Any], str]:
    """Results as (lesson, similarity or None) pairs, and an error message for the page."""
    query, team_id = form.cleaned_data["q"].strip(), team.pk if team else None
    if not query:
        return [], ""
    if form.cleaned_data["mode"] == "text":
        return [(lesson, None) for lesson in
                selectors.lessons_text_search(team_id=team_id, text=query)[:100]], ""
    try:
        found = selectors.lessons_semantic_search(team_id=team_id, text=query)
    except EmbedderError as exc:
        return [], f"Search by meaning is unavailable ({exc}); try searching by words."
    return [(s.lesson, s.similarity) for s in found], ""


@login_required
def lesson_search(request: HttpRequest) -> HttpResponse:
    team = _scope_team(request)
    form = SearchForm(request.GET or None)
    results, error = _search(team, form) if form.is_valid() else ([], "")
    context = {"team": team, "form": form, "page": _page(request, results), "error": error,
               "searched": form.is_bound and form.is_valid() and bool(form.cleaned_data["q"])}
    return render(request, _template(request, "lessons/search.html", "results"), context)


def _run_link(run_id: int | None) -> str | None:
    if run_id is None:
        return None
    for name in RUN_URL_NAMES:
        try:
            return reverse(name, args=[run_id])
        except NoReverseMatch:
            continue
    return None


@login_required
def lesson_detail(request: HttpRequest, lesson_id: int) -> HttpResponse:
    lesson = get_lesson_for_viewer(request.user, lesson_id)
    sources = selectors.lesson_sources_for(lesson=lesson, user=request.user)
    context = {
        "lesson": lesson,
        "sources": [(s, _run_link(s.run_id)) for s in sources],
        "source_run_url": _run_link(lesson.source_run_id),
        "show_source_run": lesson.source_run_id is not None and (
            not lesson.is_global or sources.filter(run_id=lesson.source_run_id).exists()),
        "can_curate": can_curate(request.user, lesson),
        "can_promote": can_promote(request.user, lesson),
    }
    return render(request, "lessons/detail.html", context)


@login_required
def lesson_edit(request: HttpRequest, lesson_id: int) -> HttpResponse:
    lesson = get_lesson_for_curator(request.user, lesson_id)
    form = LessonForm.for_lesson(lesson, request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            services.lesson_update(lesson=lesson, actor=request.user, **form.cleaned_data)
        except (services.LessonInputError, EmbedderError) as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, "Lesson saved; retrieval uses the new wording from now on.")
            return redirect("lessons:detail", lesson_id=lesson.pk)
    return render(request, "lessons/edit.html", {"lesson": lesson, "form": form})


@login_required
@require_POST
def lesson_retire(request: HttpRequest, lesson_id: int) -> HttpResponse:
    lesson = get_lesson_for_curator(request.user, lesson_id)
    services.lesson_retire(lesson=lesson, actor=request.user)
    messages.success(request, "Lesson retired: runs no longer retrieve it.")
    return redirect("lessons:detail", lesson_id=lesson.pk)


@login_required
@require_POST
def lesson_restore(request: HttpRequest, lesson_id: int) -> HttpResponse:
    lesson = get_lesson_for_curator(request.user, lesson_id)
    services.lesson_restore(lesson=lesson, actor=request.user)
    messages.success(request, "Lesson restored: runs retrieve it again.")
    return redirect("lessons:detail", lesson_id=lesson.pk)


@login_required
@require_POST
def lesson_promote(request: HttpRequest, lesson_id: int) -> HttpResponse:
    lesson = get_lesson_for_viewer(request.user, lesson_id)  # the service asks for staff: 403
    try:
        services.lesson_promote(lesson=lesson, actor=request.user)
    except services.LessonInputError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, "Lesson promoted: every team now retrieves it.")
    return redirect("lessons:detail", lesson_id=lesson.pk)
