"""The pages' downloads and printable reports: runs and a run's samples as CSV, a disk's compliance and a
comparison as a report that prints cleanly to PDF (the evidence pack a user sends to the vendor)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, StreamingHttpResponse
from django.views.decorators.http import require_GET

from jobs import access
from jobs.exports import downloads
from jobs.runs.api import RunFilter


@login_required
@require_GET
def runs_csv(request: HttpRequest) -> HttpResponse | StreamingHttpResponse:
    """The team's runs as CSV, with the API list's filters (?disk=3&state=succeeded&finished_after=…)."""
    team = access.team(request)
    filters = RunFilter(data=request.GET)
    if not filters.is_valid():
        problems = "; ".join(f"{name}: {' '.join(map(str, errors))}" for name, errors in filters.errors.items())
        return HttpResponseBadRequest(
            f"Nothing was exported. Fix the filter and ask again: {problems}", content_type="text/plain; charset=utf-8"
        )
    return downloads.runs(request, team, filters)


@login_required
@require_GET
def run_samples_csv(request: HttpRequest, pk: int) -> StreamingHttpResponse:
    return downloads.samples(access.run(request, pk))
