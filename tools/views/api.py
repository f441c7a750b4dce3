"""The tools' HTTP API: `POST /api/tools/<team>/<plugin>/<command>` with a team API token.

JSON in, JSON out. The call runs in the request (bounded by the invocation's wall time):
an API client wants its answer in the response. Errors are `{"ok": false, "error": "..."}`
with the status an API user expects (docs/tools.md lists them).
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from tools import selectors
from tools.json_input import JsonInputError, json_input_parse
from tools.services.invocations import (
    MAX_PAYLOAD_BYTES,
    InvocationRefused,
    http_status,
    invocation_call,
)
from tools.services.tokens import tool_token_used

NOT_FOUND = "No such tool: check the team, the plugin's name and that the token is for it."


def _error(status: int, message: str, **extra: Any) -> JsonResponse:
    response = JsonResponse({"ok": False, "error": message, **extra}, status=status)
    if status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="autocoder-tools"'
    return response


def _bearer(request: HttpRequest) -> str:
    scheme, _, raw = request.headers.get("Authorization", "").partition(" ")
    return raw.strip() if scheme.lower() == "bearer" else ""


@csrf_exempt  # a token, not a cookie, authenticates: there is no session to forge requests with
@require_POST
def tool_api(request: HttpRequest, team_slug: str, plugin_name: str,
             command: str) -> JsonResponse:
    token = selectors.token_by_raw(_bearer(request))
    if token is None:
        return _error(401, "A valid API token is needed: Authorization: Bearer <token>. "
                           "It may have been revoked.")
    # A token of another team or plugin is answered as if the tool did not exist.
    if token.team.slug != team_slug or (token.plugin is not None
                                        and token.plugin.normalized_name != plugin_name):
        return _error(404, NOT_FOUND)
    activation = selectors.tool_for_call(token.team_id, plugin_name=plugin_name)
    if activation is None:
        return _error(404, NOT_FOUND)
    tool_token_used(token=token)
    payload, problem = _payload(request)
    if problem is not None:
        return problem
    try:
        invocation = invocation_call(activation=activation, token_id=token.pk,
                                     command=command, payload=payload)
    except InvocationRefused as exc:
        if exc.missing:  # settings an admin must enter first: which, and the page's address
            return _error(exc.status, exc.said_at(request.build_absolute_uri("/")),
                          kind="settings_missing", missing_settings=list(exc.missing),
                          settings_url=request.build_absolute_uri(exc.url))
        return _error(exc.status, str(exc))
    status = http_status(invocation)
    if status != 200:
        return _error(status, invocation.error, kind=invocation.error_kind,
                      invocation=invocation.pk, duration_ms=invocation.duration_ms)
    return JsonResponse({"ok": True, "output": invocation.output, "invocation": invocation.pk,
                         "duration_ms": invocation.duration_ms})


def _payload(request: HttpRequest) -> tuple[Any, JsonResponse | None]:
    length = int(request.headers.get("Content-Length") or 0)
    if length > MAX_PAYLOAD_BYTES + 1024:
        return None, _error(413, f"The input is {length // 1024} KB; the limit is "
                                 f"{MAX_PAYLOAD_BYTES // 1024} KB of JSON.")
    try:
        body = request.body
    except RequestDataTooBig:
        return None, _error(413, f"The input is too large; the limit is "
                                 f"{MAX_PAYLOAD_BYTES // 1024} KB of JSON.")
    if len(body) > MAX_PAYLOAD_BYTES + 1024:
        return None, _error(413, f"The input is {len(body) // 1024} KB; the limit is "
                                 f"{MAX_PAYLOAD_BYTES // 1024} KB of JSON.")
    try:
        payload = json_input_parse(body or b"{}")
    except JsonInputError as exc:
        if not exc.syntax:  # NaN, a NUL, a lone surrogate, nested too deeply: said as it is
            return None, _error(400, str(exc))
        return None, _error(400, "The body is not JSON. Send a JSON object, like "
                                 '{"text": "hello"}, with Content-Type: application/json.')
    if not isinstance(payload, dict):
        return None, _error(400, 'The body must be a JSON object, like {"text": "hello"}.')
    return payload, None
