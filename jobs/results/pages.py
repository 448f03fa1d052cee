"""The chart endpoints the disk and run pages draw from (static/js/chart-disk.js, chart-run.js)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET

from jobs import access
from jobs.results import series

# Some 50,000 numbers for a disk of six profiles: spaces would add a sixth to the bytes.
COMPACT = {"separators": (",", ":")}


@login_required
@require_GET
def disk_series(request: HttpRequest, pk: int) -> JsonResponse:
    disk = access.disk(request, pk)
    try:
        return JsonResponse(series.disk_series(disk, request.GET), json_dumps_params=COMPACT)
    except series.BadRequest as exc:
        return JsonResponse({"error": str(exc)}, status=400)


@login_required
@require_GET
def run_series(request: HttpRequest, pk: int) -> JsonResponse:
    return JsonResponse(series.run_series(access.owned(request, series.RUN_FOR_SERIES, pk)))
