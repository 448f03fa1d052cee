"""The chart endpoints the disk and run pages draw from (static/js/chart-disk.js, chart-run.js)."""

from __future__ import annotations

from typing import Any

import msgspec
from django.contrib.auth.decorators import login_required
from django.core.serializers.json import DjangoJSONEncoder
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.http import require_GET

from jobs import access
from jobs.results import series

# Compact UTF-8 JSON with the numbers as the json module writes them (the shortest that reads back the same), in
# a tenth of its time: the standard library took some 70 ms of an all-time chart's 1.9 MB
# (bench/chart_endpoint.py). Anything else the chart's JSON could hold (a lazy string) is written as Django would.
CHART_JSON = msgspec.json.Encoder(enc_hook=DjangoJSONEncoder().default)


def chart_json(data: dict[str, Any]) -> HttpResponse:
    return HttpResponse(CHART_JSON.encode(data), content_type="application/json")


@login_required
@require_GET
def disk_series(request: HttpRequest, pk: int) -> HttpResponse:
    disk = access.disk(request, pk)
    try:
        return chart_json(series.disk_series(disk, request.GET))
    except series.BadRequest as exc:
        return JsonResponse({"error": str(exc)}, status=400)


@login_required
@require_GET
def run_series(request: HttpRequest, pk: int) -> JsonResponse:
    return JsonResponse(series.run_series(access.owned(request, series.RUN_FOR_SERIES, pk)))
