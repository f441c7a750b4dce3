"""Request types of the portal's views: what the middleware and decorators guarantee, for mypy.

django-htmx's middleware sets `request.htmx` on every request (django-htmx's documented
pattern); `login_required` lets only signed-in users through, so behind it `request.user` is a
User although HttpRequest says User | AnonymousUser.
"""

from __future__ import annotations

from django.contrib.auth.models import User
from django.http import HttpRequest
from django_htmx.middleware import HtmxDetails


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails


class AuthenticatedHttpRequest(HtmxHttpRequest):
    """The request of a view behind login_required."""

    user: User
