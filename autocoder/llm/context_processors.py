"""The "no model works" banner for the people who can do something about it."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TypedDict

from django.http import HttpRequest

from autocoder.installation import InstallationFault


class Banner(TypedDict):
    problem: str
    fix: str
    site_admin: bool


def model_banner(request: HttpRequest) -> dict[str, Callable[[], Banner | None]]:
    """`model_banner`: for site admins and team admins while no model works (none set up, or
    one whose last call failed), what to show.

    A callable, cached per request: the check runs only on pages that show the banner (full
    pages through base.html, not htmx fragments)."""
    return {"model_banner": functools.cache(lambda: _banner(request))}


def _banner(request: HttpRequest) -> Banner | None:
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return None
    site_admin = bool(user.is_staff or user.is_superuser)
    if not site_admin and not _team_admin(request):
        return None
    fault = _model_fault()
    if fault is None:
        return None
    return {"problem": fault.problem, "fix": fault.fix, "site_admin": site_admin}


def _team_admin(request: HttpRequest) -> bool:
    from teams.models import Membership
    from teams.selectors import request_memberships

    return any(m.role == Membership.Role.ADMIN for m in request_memberships(request))


def _model_fault() -> InstallationFault | None:
    from autocoder.llm.readiness import model_known_fault

    try:
        return model_known_fault()
    except Exception as fault:  # noqa: BLE001 - a page never fails for its banner
        return fault if isinstance(fault, InstallationFault) else None
