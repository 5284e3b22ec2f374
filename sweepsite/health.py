"""`/healthz`: the app's health report (sweeps/health.py) over HTTP.

It answers 200 when the report is ok, else 503 with the reasons; JSON either way. It needs no login
and reads no session.
"""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from sweeps import health


@never_cache
@require_safe
def healthz(request: HttpRequest) -> JsonResponse:
    body = health.report()
    return JsonResponse(body, status=200 if body["ok"] else 503)
