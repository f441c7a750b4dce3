from __future__ import annotations

import ipaddress
import secrets

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from config import health


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    results = health.run_checks(health.SERVICE_CHECKS)
    healthy = health.service_healthy(results)
    body = {"status": "ok" if healthy else "unhealthy",
            "checks": {check.name: check.as_dict() for check in results}}
    return JsonResponse(body, status=200 if healthy else 503)


@never_cache
@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    """Prometheus metrics of the whole stack (autocoder/metrics.py), for a scraper with the
    token, or from this machine when METRICS_ALLOW_LOOPBACK says so; anyone else is refused
    (by default: everyone, as long as no token is set)."""
    from prometheus_client import CONTENT_TYPE_LATEST

    from autocoder.metrics import exposition

    refusal = _metrics_refusal(request)
    if refusal is not None:
        return refusal
    return HttpResponse(exposition(settings.METRICS_DIR), content_type=CONTENT_TYPE_LATEST)


def _metrics_refusal(request: HttpRequest) -> HttpResponse | None:
    given = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
    if settings.METRICS_TOKEN and given:
        if secrets.compare_digest(given.encode(), settings.METRICS_TOKEN.encode()):
            return None
        return HttpResponse("Wrong metrics token.\n", status=403, content_type="text/plain")
    # Off unless switched on: behind a reverse proxy on this host every request is local.
    if settings.METRICS_ALLOW_LOOPBACK and _loopback(request.META.get("REMOTE_ADDR", "")):
        return None
    answer = HttpResponse("Metrics need a token: set METRICS_TOKEN and send it as "
                          "\"Authorization: Bearer <token>\" (see docs/operating.md, "
                          "\"Metrics\").\n", status=401, content_type="text/plain")
    answer["WWW-Authenticate"] = 'Bearer realm="metrics"'
    return answer


def _loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False
