"""Board writes: reordering the queue (reviewers and admins), announced live to the team."""

from __future__ import annotations

from collections.abc import Callable

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.db import transaction

from autocoder import realtime
from projects.selectors.board import queue_order
from runs.models import Project
from teams.models import Membership
from teams.services.audit import audit_record


class QueueError(Exception):
    """The move cannot be made (the project left the queue meanwhile, ...)."""


def team_event_on_commit(*, team_id: int, kind: str, data: dict[str, object]) -> None:
    """Tell every open page of the team, once the change is visible to the pages' re-fetch."""
    transaction.on_commit(
        lambda: realtime.publish(realtime.team_group(team_id), {"kind": kind, "data": data}))


def _check_may_reorder(*, project: Project, user: User) -> None:
    membership = Membership.objects.filter(team_id=project.team_id, user=user).first()
    if membership is None or not membership.can_review:
        raise PermissionDenied("Only reviewers and admins can change the order of the queue.")


def _locked_queue(project: Project) -> list[int]:
    # The whole queue is locked so that two people reordering at once produce one consistent
    # order, not duplicate places.
    ids = list(Project.objects.select_for_update()
               .filter(team_id=project.team_id, status=Project.Status.QUEUED)
               .order_by(*queue_order()).values_list("pk", flat=True))
    if project.pk not in ids:
        raise QueueError(f"“{project.name}” is no longer queued, so it cannot be moved.")
    return ids


def _move(*, project: Project, user: User,
          target: Callable[[list[int], int], int]) -> int:
    """`target(queue without the project, its old place)` says where it goes."""
    _check_may_reorder(project=project, user=user)
    with transaction.atomic():
        ids = _locked_queue(project)
        before = ids.index(project.pk)
        ids.remove(project.pk)
        after = min(max(target(ids, before), 0), len(ids))
        ids.insert(after, project.pk)
        _renumber(team_id=project.team_id, ids=ids)
        if before != after:
            _record_move(project=project, user=user, before=before, after=after)
    return after


def _renumber(*, team_id: int, ids: list[int]) -> None:
    places = dict(Project.objects.filter(pk__in=ids).values_list("pk", "queue_position"))
    changed = [Project(pk=pk, queue_position=place)
               for place, pk in enumerate(ids, start=1) if places[pk] != place]
    Project.objects.bulk_update(changed, ["queue_position"])


def _record_move(*, project: Project, user: User, before: int, after: int) -> None:
    audit_record(actor=user, action="project.queue_move", team=project.team, target=project,
                 before={"position": before + 1}, after={"position": after + 1})
    team_event_on_commit(team_id=project.team_id, kind="board.reordered",
                         data={"project": project.pk, "name": project.name,
                               "position": after + 1, "by": user.get_username()})


def project_queue_move(*, project: Project, user: User, position: int) -> int:
    """Move a queued project to `position` (0 = first; clamped) and renumber the queue 1..n.
    Returns the 0-based place it got."""
    return _move(project=project, user=user, target=lambda ids, old: position)


def project_queue_place_after(*, project: Project, user: User,
                              after_id: int | None) -> int:
    """Put a queued project right after another one (None: first) - what a drop means on a
    board that may be filtered, where on-screen indexes are not queue places."""
    def target(ids: list[int], old: int) -> int:
        if after_id is None:
            return 0
        if after_id not in ids:
            raise QueueError("The card you dropped it next to has left the queue; try again.")
        return ids.index(after_id) + 1
    return _move(project=project, user=user, target=target)


def project_queue_step(*, project: Project, user: User, direction: str) -> int:
    """One place up or down (the keyboard and no-JS alternative to dragging)."""
    if direction not in ("up", "down"):
        raise QueueError("Choose to move the project up or down.")
    step = -1 if direction == "up" else 1
    return _move(project=project, user=user, target=lambda ids, old: old + step)
