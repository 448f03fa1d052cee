"""A set's page (a sweep: its progress, its points, its curves and their knees under the rule asked for), its
charts' data, and cancelling it."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from jobs import access
from jobs.sets import cancelling, facts, reading
from jobs.sets.forms import rule_form
from jobs.shares.forms import ShareForm


@login_required
def set_detail(request: HttpRequest, pk: int) -> HttpResponse:
    run_set = access.run_set(request, pk)
    form = rule_form(request.GET)
    can_change = access.can_change(request, run_set.team)
    context = facts.page(run_set, form.rule()) | {
        "form": form,
        "can_change": can_change,
        "share_form": ShareForm() if can_change else None,
        "query": request.GET.urlencode(),
    }
    return render(request, "jobs/sets/set_detail.html", context)


@login_required
def set_series(request: HttpRequest, pk: int) -> JsonResponse:
    """The set page's charts, under the knee rule the page's address asks for."""
    run_set = access.run_set(request, pk)
    form = rule_form(request.GET)
    if form.is_bound and not form.is_valid():
        return JsonResponse({"error": form.problems()}, status=400)
    result = reading.result_of(run_set, rule=form.rule())
    return JsonResponse(facts.series(run_set, result))


@login_required
@require_POST
def set_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    run_set = access.run_set(request, pk)
    access.require_change(request, run_set.team)
    cancelling.cancel(run_set)
    return redirect("set_detail", pk=run_set.pk)
