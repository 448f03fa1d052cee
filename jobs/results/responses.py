"""The JSON answers the charts read, the same for the team's pages (jobs/results/pages.py) and a share link's
(jobs/shares/public.py): a disk's series and the latency distributions of a comparison, or the refusal as
{"error"} with status 400."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec
from django.core.serializers.json import DjangoJSONEncoder
from django.http import HttpResponse, JsonResponse

from jobs.models import Disk, Team
from jobs.results import distributions, series, stats

# Compact UTF-8 JSON with the numbers as the json module writes them (the shortest that reads back the same), in
# a tenth of its time: the standard library took some 70 ms of an all-time chart's 1.9 MB
# (bench/chart_endpoint.py). Anything else the chart's JSON could hold (a lazy string) is written as Django would.
CHART_JSON = msgspec.json.Encoder(enc_hook=DjangoJSONEncoder().default)


def chart_json(data: dict[str, Any]) -> HttpResponse:
    return HttpResponse(CHART_JSON.encode(data), content_type="application/json")


def disk_series(disk: Disk, params: Mapping[str, str]) -> HttpResponse:
    try:
        return chart_json(series.disk_series(disk, params))
    except series.BadRequest as exc:
        return JsonResponse({"error": str(exc)}, status=400)


def distributions_answer(params: Mapping[str, str], team: Team) -> JsonResponse:
    try:
        return JsonResponse(distributions.answer(params, team))
    except stats.StatsError as exc:
        return JsonResponse({"error": str(exc), "field": exc.field}, status=400)
