"""The answer while the database is down: 503 "try again in a minute", never a 500 or a hang.

Django calls `server_error` (handler500 in config/urls.py) for any exception a page did not
handle; when that exception says the database cannot be reached (autocoder/database/outage.py)
the answer is a small page of its own, rendered without the database (no base.html, whose
navigation reads teams and notifications), the message alone for an htmx button, or JSON for
the API. Anything else is Django's own 500 page.
"""

from __future__ import annotations

import logging
import sys

from django.db import DEFAULT_DB_ALIAS, connections
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string
from django.utils.cache import add_never_cache_headers
from django.views import defaults

from autocoder.database import outage

logger = logging.getLogger(__name__)

MESSAGE = "The database is not answering; try again in a minute."
RETRY_AFTER_S = 30


def server_error(request: HttpRequest) -> HttpResponse:
    """handler500: a database outage answers 503, anything else Django's 500 page."""
    error = sys.exc_info()[1]
    if error is None or not outage.is_outage(error):
        return defaults.server_error(request)
    if not isinstance(error.__cause__, outage.DatabaseUnavailable):
        # Not refused by the circuit: the server went away under a query. Open the circuit
        # so the next pages do not wait for the pool; it closes once the server answers.
        logger.warning("database outage during %s %s: %s", request.method, request.path,
                       outage.describe(error))
        notice_outage(error)
    response = database_unavailable(request)
    response._has_been_logged = True  # type: ignore[attr-defined]  # the access log has it
    return response


def notice_outage(error: BaseException, alias: str = DEFAULT_DB_ALIAS) -> None:
    wrapper = connections[alias]
    notice = getattr(wrapper, "notice_outage", None)
    if notice is not None:
        notice(outage.describe(error))


def database_unavailable(request: HttpRequest) -> HttpResponse:
    """503 with the page, the message alone for htmx, or JSON for API clients."""
    if wants_json(request):
        response: HttpResponse = JsonResponse({"ok": False, "error": MESSAGE}, status=503)
    elif request.headers.get("HX-Request") == "true":
        response = HttpResponse(render_to_string("database_unavailable.html#message"),
                                status=503)
        # Shown at the top of the page the person is on (base.html's htmx-config swaps 503s).
        response["HX-Retarget"], response["HX-Reswap"] = "#main", "afterbegin"
    else:
        response = HttpResponse(render_to_string("database_unavailable.html"), status=503)
    response["Retry-After"] = str(RETRY_AFTER_S)
    add_never_cache_headers(response)
    return response


def wants_json(request: HttpRequest) -> bool:
    """The tools' API (/api/...) answers JSON, and so does a client that prefers it."""
    if request.path.startswith("/api/"):
        return True
    return request.get_preferred_type(["text/html", "application/json"]) == "application/json"
