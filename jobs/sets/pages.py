"""A set's page (a sweep: its progress, its points, its curves and their knees under the rule asked for), its
charts' data, and cancelling it."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from jobs import access
from jobs.sets import cancelling, facts, reading
from jobs.sets.forms import KneeRuleForm


@login_required
def set_detail(request: HttpRequest, pk: int) -> HttpResponse:
    run_set = access.run_set(request, pk)
    form = _rule_form(request)
    members = reading.members(run_set)
    result = reading.result_of(run_set, members, form.rule())
    context = {
        "run_set": run_set,
        "form": form,
        "title": f"Sweep {run_set.pk} · {run_set.profile_name} on {run_set.disk.label}",
        "progress": facts.progress(run_set, members),
        "plan_words": facts.plan_words(run_set),
        "axes_words": facts.axes_words(run_set),
        "result": result,
        "rows": facts.rows(run_set, result),
        "fields": facts.field_names(run_set),
        "can_change": access.can_change(request, run_set.team),
        "query": request.GET.urlencode(),
    }
    return render(request, "jobs/sets/set_detail.html", context)


@login_required
def set_series(request: HttpRequest, pk: int) -> JsonResponse:
    """The set page's charts, under the knee rule the page's address asks for."""
    run_set = access.run_set(request, pk)
    form = _rule_form(request)
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


def _rule_form(request: HttpRequest) -> KneeRuleForm:
    asked = {name for name in ("iops_growth", "p99_growth") if request.GET.get(name, "").strip()}
    return KneeRuleForm(request.GET if asked else None)
