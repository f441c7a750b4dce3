"""Security measures written once for every page: the Content-Security-Policy and the log-in
throttle's per-address limit (docs/operating.md, "Security").

The policy allows only what the portal itself serves: scripts and styles from static/ (htmx, its
websocket extension, portal.js), no inline script, no inline style, no `eval`, websockets back to
the page's own host. A page that needs more is a page to fix, not a policy to loosen.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from axes.handlers.database import AxesDatabaseHandler
from django.conf import settings
from django.db.models import QuerySet, Sum
from django.http import HttpRequest, HttpResponse

CSP_HEADER = "Content-Security-Policy"


def content_security_policy(host: str) -> str:
    """The policy of a page served to `host` (websockets may only go back to it)."""
    directives = {
        "default-src": "'self'",
        "script-src": "'self'",
        "style-src": "'self'",
        "img-src": "'self' data:",
        "font-src": "'self'",
        # 'self' covers ws:/wss: to the same host in CSP 3; named as well for older browsers.
        "connect-src": f"'self' ws://{host} wss://{host}",
        "object-src": "'none'",
        "base-uri": "'self'",
        "form-action": "'self'",
        "frame-ancestors": "'none'",
    }
    return "; ".join(f"{name} {value}" for name, value in directives.items())


class ContentSecurityPolicyMiddleware:
    """Adds the policy to every response that has none of its own."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if CSP_HEADER not in response:
            response[CSP_HEADER] = content_security_policy(_host(request))
        return response


def _host(request: HttpRequest) -> str:
    try:
        return request.get_host()
    except Exception:  # a disallowed host gets its 400 elsewhere; the policy still applies
        return "'none'"


class LoginThrottle(AxesDatabaseHandler):
    """django-axes, locking by address as well as by account.

    One user name at one address is locked after AXES_FAILURE_LIMIT failures (brute force on an
    account); one address is locked after LOGIN_IP_FAILURE_LIMIT failures across every user name
    (password spraying). Axes compares one number with AXES_FAILURE_LIMIT, so the address's
    failures are reported on that scale: they reach it exactly when they reach the address limit.
    """

    def get_failures(self, request: Any, credentials: dict[str, Any] | None = None) -> int:
        # In the order of AXES_LOCKOUT_PARAMETERS: (user name, address), then address alone.
        account, *address = self.get_user_attempts(request, credentials)
        limit = int(settings.AXES_FAILURE_LIMIT)
        address_limit = max(int(settings.LOGIN_IP_FAILURE_LIMIT), 1)
        at_address = _failures(address[0]) if address else 0
        return max(_failures(account), at_address * limit // address_limit)

    def reset_user_attempts(self, request: Any, credentials: dict[str, Any] | None = None) -> int:
        # A successful log-in clears that account's failures only: an attacker holding one
        # account must not wipe the address's count of failures on the others.
        account = self.filter_user_attempts(request, credentials)[0]
        count, _ = account.delete()
        return int(count)


def _failures(attempts: QuerySet[Any]) -> int:
    return int(attempts.aggregate(total=Sum("failures_since_start"))["total"] or 0)
