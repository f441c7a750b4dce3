"""Who may see and change a lesson. Outsiders get 404, members lacking a role 403.

- A team lesson is visible to the team's members; reviewers and admins of the team curate it
  (edit, retire, restore); promoting it to global (every team's prompts) takes site staff.
- A global lesson is visible to every signed-in user; only staff curate it.
"""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.exceptions import PermissionDenied
from django.http import Http404

from autocoder.lessons.models import Lesson
from teams.models import Membership

User = AbstractBaseUser | AnonymousUser


def _membership(user: User, team_id: int) -> Membership | None:
    if not user.is_authenticated:
        return None
    return Membership.objects.filter(team_id=team_id, user_id=user.pk).first()


def can_view(user: User, lesson: Lesson) -> bool:
    if not user.is_authenticated:
        return False
    return lesson.team_id is None or _membership(user, lesson.team_id) is not None


def can_curate(user: User, lesson: Lesson) -> bool:
    if lesson.team_id is None:
        return bool(user.is_authenticated and getattr(user, "is_staff", False))
    membership = _membership(user, lesson.team_id)
    return membership is not None and membership.can_review


def can_promote(user: User, lesson: Lesson) -> bool:
    """A promoted lesson goes into every team's prompts, so site staff decide, not one team's
    reviewers (staff who can see the lesson: members of its team)."""
    return (lesson.team_id is not None and bool(getattr(user, "is_staff", False))
            and can_view(user, lesson))


def get_lesson_for_viewer(user: User, lesson_id: int) -> Lesson:
    lesson = Lesson.objects.select_related("team").filter(pk=lesson_id).first()
    if lesson is None or not can_view(user, lesson):
        raise Http404("No such lesson")
    return lesson


def get_lesson_for_curator(user: User, lesson_id: int) -> Lesson:
    lesson = get_lesson_for_viewer(user, lesson_id)
    if not can_curate(user, lesson):
        raise PermissionDenied("Only reviewers of the lesson's team (staff for global lessons) "
                               "can change it.")
    return lesson
