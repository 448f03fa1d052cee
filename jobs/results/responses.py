"""The JSON answers the charts read, the same for the team's pages (jobs/results/pages.py) and a share link's
(jobs/shares/public.py): a disk's series and the latency distributions of a comparison, or the refusal as
{"error"} with status 400."""

from __future__ import annotations

from collections.abc import Mapping

from django.http import JsonResponse

from jobs.models import Disk, Team
from jobs.results import distributions, series, stats

# Some 50,000 numbers for a disk of six profiles: spaces would add a sixth to the bytes.
COMPACT = {"separators": (",", ":")}


def disk_series(disk: Disk, params: Mapping[str, str]) -> JsonResponse:
    try:
        return JsonResponse(series.disk_series(disk, params), json_dumps_params=COMPACT)
    except series.BadRequest as exc:
        return JsonResponse({"error": str(exc)}, status=400)


def distributions_answer(params: Mapping[str, str], team: Team) -> JsonResponse:
    try:
        return JsonResponse(distributions.answer(params, team))
    except stats.StatsError as exc:
        return JsonResponse({"error": str(exc), "field": exc.field}, status=400)
