"""Web actions that queue work need Redis (the task queue): while it is down they answer
503 with a page in plain words instead of a 500, and change nothing."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

import redis
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.http import url_has_allowed_host_and_scheme
from django_htmx.http import reswap, retarget

from autocoder import heartbeat

logger = logging.getLogger(__name__)

View = Callable[..., HttpResponse]


def broker_required(view: View) -> View:
    """Check Redis before the action writes anything: a run created now could not be started
    until Redis is back, and the person pressing the button would not know whether it was."""
    @functools.wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not broker_reachable():
            return broker_unavailable(request)
        try:
            return view(request, *args, **kwargs)
        except redis.ConnectionError:  # down mid-request: the action's transaction rolled back
            logger.warning("Redis went away during %s", request.path, exc_info=True)
            return broker_unavailable(request)

    return wrapped


def broker_reachable() -> bool:
    return heartbeat.redis_reachable()


def broker_unavailable(request: HttpRequest) -> HttpResponse:
    """The page, or for an htmx button the message alone, shown at the top of the page the
    person is on (htmx swaps a 503 only because base.html's htmx-config allows it)."""
    back = url_has_allowed_host_and_scheme(request.headers.get("Referer", ""),
                                           allowed_hosts={request.get_host()})
    context = {"back_url": request.headers["Referer"] if back else "/"}
    if getattr(request, "htmx", False):
        response = render(request, "broker_unavailable.html#message", context, status=503)
        response = retarget(response, "#main")
        response = reswap(response, "afterbegin")
    else:
        response = render(request, "broker_unavailable.html", context, status=503)
    response["Retry-After"] = "30"
    return response
