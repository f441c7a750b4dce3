from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from autocoder import health


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    results = health.run_checks(health.SERVICE_CHECKS)
    healthy = health.service_healthy(results)
    body = {"status": "ok" if healthy else "unhealthy",
            "checks": {check.name: check.as_dict() for check in results}}
    return JsonResponse(body, status=200 if healthy else 503)
