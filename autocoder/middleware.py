"""Requests that carry a NUL byte are refused with 400 before any view runs.

PostgreSQL text cannot hold NUL ("\\x00"), so a NUL that reaches a query (a plugin name in the
address, a search term, a wizard answer) used to end in a 500. No page of the portal has a use
for one, so it is refused in one place instead of in every view. Uploaded files are not looked
at: a wheel or a zip may well contain NUL bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest

NUL = "\x00"
_FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")
MESSAGE = ("Bad request: the {where} contains a NUL character (\\x00), which no page of this "
           "site accepts. Remove it and try again.\n")


class RefuseNulBytesMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        where = nul_location(request)
        if where:
            return HttpResponseBadRequest(MESSAGE.format(where=where),
                                          content_type="text/plain; charset=utf-8")
        return self.get_response(request)


def nul_location(request: HttpRequest) -> str:
    """Where a NUL byte is ("address", "query string", "form"), or "" when there is none."""
    if NUL in request.path or NUL in request.path_info:
        return "address"
    if NUL in request.META.get("QUERY_STRING", "") or _has_nul(request.GET.lists()):
        return "query string"
    if request.method == "POST" and request.content_type in _FORM_TYPES:
        if _has_nul(request.POST.lists()):
            return "form"
    return ""


def _has_nul(lists: Iterable[tuple[str, list[str]]]) -> bool:
    # Keys too: a NUL in a field name reaches the view as surely as one in its value.
    return any(NUL in key or any(NUL in value for value in values) for key, values in lists)
