"""The Compare page's latency distributions endpoint (static/js/compare-distributions.js)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET

from jobs import access
from jobs.results import distributions, stats


@login_required
@require_GET
def distributions_json(request: HttpRequest) -> JsonResponse:
    """/compare/distributions.json?runs=1,2 or ?disks=1,2&profile=<name>: as GET /api/v1/distributions/."""
    try:
        return JsonResponse(distributions.answer(request.GET, access.team(request)))
    except stats.StatsError as exc:
        return JsonResponse({"error": str(exc), "field": exc.field}, status=400)
