"""The team board: columns by project status, live, with a reorderable queue."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse, QueryDict
from django.middleware.csrf import get_token
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from projects.board_render import CardContext, column_cards_html
from projects.middleware import SESSION_KEY
from projects.selectors.board import COLUMN_KEYS, COLUMNS, BoardFilters, board_for
from projects.services import board as services
from runs.models import Project
from teams.http import AuthenticatedHttpRequest
from teams.models import Membership, Team
from teams.permissions import get_team_for_member
from teams.selectors.generation import generation_state

# Beyond this many cards a column shows a link to itself alone (a status filter) instead.
COLUMN_LIMIT = 100


def board_filters(params: QueryDict) -> BoardFilters:
    status = params.get("status", "")
    return BoardFilters(mine=params.get("mine") == "1", review=params.get("review") == "1",
                        status=status if status in COLUMN_KEYS else "",
                        text=params.get("q", "").strip()[:100])


@login_required
def board(request: AuthenticatedHttpRequest, slug: str) -> HttpResponse:
    team, membership = get_team_for_member(request.user, slug)
    if request.session.get(SESSION_KEY) != team.slug:  # the board's team becomes the current one
        request.session[SESSION_KEY] = team.slug
    context = _context(request, team, membership, board_filters(request.GET))
    template = "projects/board.html#board" if request.htmx else "projects/board.html"
    return render(request, template, context)


@login_required
@require_POST
def queue_move(request: AuthenticatedHttpRequest, slug: str, pk: int) -> HttpResponse:
    team, membership = get_team_for_member(request.user, slug)
    project = get_object_or_404(Project, pk=pk, team=team)
    try:
        _apply_move(request, project)
    except services.QueueError as error:
        messages.error(request, str(error))
    except ValueError:
        messages.error(request, "That is not a place in the queue.")
    if not request.htmx:
        return redirect(f"{reverse('board', args=[team.slug])}#card-{project.pk}")
    context = _context(request, team, membership, board_filters(request.POST))
    return render(request, "projects/board.html#board", context)


def _context(request: AuthenticatedHttpRequest, team: Team, membership: Membership,
             filters: BoardFilters) -> dict[str, object]:
    limit = None if filters.status else COLUMN_LIMIT
    board = board_for(team=team, membership=membership, filters=filters, limit=limit)
    cards = CardContext(csrf_token=get_token(request),
                        move_url_prefix=reverse("board_queue_move",
                                                args=[team.slug, 0])[:-len("0/move/")])
    for column in board.columns:
        column.html = column_cards_html(column, cards)
    return {
        "team": team, "membership": membership, "filters": filters, "board": board,
        "may_reorder": membership.can_review,
        "generation": generation_state(team=team),
        "column_choices": [(column.key, column.label) for column in COLUMNS],
    }


def _apply_move(request: AuthenticatedHttpRequest, project: Project) -> None:
    if "after" in request.POST:
        after = request.POST["after"]
        services.project_queue_place_after(project=project, user=request.user,
                                           after_id=int(after) if after else None)
    elif "position" in request.POST:
        services.project_queue_move(project=project, user=request.user,
                                    position=int(request.POST["position"]) - 1)
    else:
        services.project_queue_step(project=project, user=request.user,
                                    direction=request.POST.get("direction", ""))
