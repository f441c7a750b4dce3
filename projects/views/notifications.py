"""Notifications: the list page, marking read, and the nav's bell fragment."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from projects.templatetags.portal_nav import nav_counts
from teams.http import AuthenticatedHttpRequest
from teams.models import Notification
from teams.selectors.notifications import notifications_for
from teams.services import notifications as services

PAGE_SIZE = 30


@login_required
def notification_list(request: AuthenticatedHttpRequest) -> HttpResponse:
    unread_only = request.GET.get("unread") == "1"
    notifications = notifications_for(request.user, unread_only=unread_only)
    page = Paginator(notifications, PAGE_SIZE).get_page(request.GET.get("page"))
    return render(request, "projects/notification_list.html",
                  {"page": page, "unread_only": unread_only})


@login_required
def notification_open(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    """Follow a notification: it counts as read from now on."""
    notification = get_object_or_404(Notification, pk=pk, user=request.user)
    services.notification_mark_read(notification=notification, user=request.user)
    target = notification.url
    if not target or not url_has_allowed_host_and_scheme(target, allowed_hosts=None):
        return redirect("notification_list")
    return redirect(target)


@login_required
@require_POST
def notification_read(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    notification = get_object_or_404(Notification, pk=pk, user=request.user)
    services.notification_mark_read(notification=notification, user=request.user)
    return redirect("notification_list")


@login_required
@require_POST
def notifications_read_all(request: AuthenticatedHttpRequest) -> HttpResponse:
    services.notifications_mark_all_read(user=request.user)
    return redirect("notification_list")


@login_required
def notification_bell(request: AuthenticatedHttpRequest) -> HttpResponse:
    """The nav's counters, re-fetched when a live event arrives."""
    return render(request, "projects/partials/nav.html", nav_counts(request))
