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
    response = render(request, "broker_unavailable.html", status=503)
    response["Retry-After"] = "30"
    return response
