"""A run's page, its live progress, cancelling it and its raw output."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from jobs import access
from jobs.runs import lifecycle


@login_required
def run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    run = access.run(request, pk)
    return render(request, "jobs/run_detail.html", {"run": run, "summary": run.summary or {}})


@login_required
def run_progress(request: HttpRequest, pk: int) -> JsonResponse:
    run = access.run(request, pk)
    return JsonResponse(
        {
            "id": run.pk,
            "state": run.state,
            "state_label": run.get_state_display(),
            "explanation": run.explanation,
            "progress": run.live_progress(),
            "final": run.is_final,
        }
    )


@login_required
@require_POST
def run_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    run = access.run(request, pk)
    access.require_change(request, run.team)
    lifecycle.cancel(run)
    return redirect("run_detail", pk=run.pk)


@login_required
def run_raw(request: HttpRequest, pk: int) -> HttpResponse:
    run = access.run(request, pk)
    response = HttpResponse(run.raw_output, content_type="text/plain; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="benchweb-run-{run.pk}.txt"'
    return response
