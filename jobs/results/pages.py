"""The results pages: the overview, Compare and its latency distributions, and the chart endpoints the disk and
run pages draw from (static/js/chart-disk.js, chart-run.js, compare-distributions.js). What they show is computed
in jobs/results/overview.py, compare.py, series.py and responses.py."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET

from jobs import access
from jobs.results import compare as comparing
from jobs.results import overview as overview_facts
from jobs.results import responses, series
from jobs.shares.forms import ShareForm


@login_required
def overview(request: HttpRequest) -> HttpResponse:
    team = access.team(request)
    context = overview_facts.facts(team, timezone.now(), request.GET.get("page"))
    context["can_change"] = access.can_change(request, team)
    return render(request, "jobs/results/overview.html", context)


@login_required
def compare(request: HttpRequest) -> HttpResponse:
    team = access.team(request)
    context = comparing.chosen(team, request.GET)
    context["share_form"] = ShareForm() if access.can_change(request, team) else None
    return render(request, "jobs/results/compare.html", context)


@login_required
@require_GET
def distributions_json(request: HttpRequest) -> JsonResponse:
    """/compare/distributions.json?runs=1,2 or ?disks=1,2&profile=<name>: as GET /api/v1/distributions/."""
    return responses.distributions_answer(request.GET, access.team(request))


@login_required
@require_GET
def disk_series(request: HttpRequest, pk: int) -> HttpResponse:
    return responses.disk_series(access.disk(request, pk), request.GET)


@login_required
@require_GET
def run_series(request: HttpRequest, pk: int) -> JsonResponse:
    return JsonResponse(series.run_series(access.owned(request, series.RUN_FOR_SERIES, pk)))
