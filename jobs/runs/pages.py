"""The runs list, a run's page, its live progress, cancelling it and its raw output."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse, QueryDict
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from jobs import access, clock, environment, figures, limits, units
from jobs.analysis import steady, verdicts
from jobs.disks import precondition
from jobs.models import Disk, Run
from jobs.results import burst, compare, stability
from jobs.runs import stopping
from jobs.runs.api import RunFilter
from jobs.sets import facts as set_facts


@login_required
def run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    run = access.run(request, pk)
    Run.want_progress([run])  # its live figures are read often while the page is open
    summary = run.summary or {}
    credits = burst.run_burst(run)
    context = {
        "run": run,
        "summary": summary,
        "figures": figures.result_figures(summary),
        "workload": figures.workload_facts(summary),
        "printed_runtime": figures.printed_runtime(summary),
        "fill_text": precondition.fill_text(summary),
        "fio_view": figures.fio_view(summary),
        "has_latency": _has_latency(summary),
        "burst": credits,
        **_against_limits(run, summary, credits["limit_applied"] if credits else None),
        "steady": _steady(run),
        "verdicts": _verdicts(run),
        "environment": environment.facts(run.environment),
        "stability": stability.run_stability(run) if run.state == Run.State.SUCCEEDED else None,
        "set_place": set_facts.member_place(run),
        "set_point_text": set_facts.member_point(run),
    }
    return render(request, "jobs/runs/run_detail.html", context)


def _steady(run: Run) -> dict[str, str] | None:
    """The run's steady-state stamp in words; only a succeeded run has a result to judge."""
    if run.state != Run.State.SUCCEEDED:
        return None
    stamp = run.steady_state or {}
    return {"state": stamp.get("state", steady.NOT_CHECKED), "text": steady.describe(run.steady_state)}


def _verdicts(run: Run) -> dict[str, Any] | None:
    """Whether the number is the disk's, as the run page says it: each verdict with its label and sentence, or that
    nothing was found against it; None for a run not judged (not succeeded, or stored before runs were judged)."""
    if run.state != Run.State.SUCCEEDED or run.verdicts is None:
        return None
    found = []
    for verdict in run.verdicts:
        label = verdicts.label(verdict["kind"])
        # The stamp says the label: the sentence goes on from it.
        found.append({"kind": verdict["kind"], "label": label, "text": verdict["text"].removeprefix(f"{label}: ")})
    return {"found": found}


def _has_latency(summary: dict[str, Any]) -> bool:
    # An excerpt or an ndisk64 report has no latency: no table of dashes.
    clat = [(summary.get(direction) or {}).get("clat_us") or {} for direction in ("read", "write")]
    return any(value is not None for numbers in clat for value in numbers.values())


def _against_limits(run: Run, summary: dict[str, Any], applied: str | None = None) -> dict[str, Any]:
    """The limit the run was made against, at its block size with the binding cap named, and its efficiency
    against the limit that applied (burst or baseline, as the burst-credit model says), else against the
    baseline and, where the disk bursts, the burst limit."""
    snapshot = run.limits_snapshot or {}
    measured = (summary.get("total") or {}).get("iops")
    bandwidth = (summary.get("total") or {}).get("bw_bytes_per_s")
    unit = limits.limit_unit(snapshot)
    found = limits.throughput_efficiency(bandwidth, snapshot)
    return {
        "theoretical_iops": limits.promised_iops(snapshot),
        "theoretical": compare.theoretical_at_block_size(snapshot),
        "efficiency": limits.Efficiency.against(measured, snapshot, applied),
        # The measured bandwidth in the limit's unit too, and against the throughput limit.
        "bandwidth": limits.beside(units.format_bytes_per_s(bandwidth), bandwidth, unit) if bandwidth else "",
        "throughput_efficiency": found,
        "throughput_efficiency_text": limits.throughput_efficiency_text(found, snapshot) if found else "",
    }


@login_required
def run_progress(request: HttpRequest, pk: int) -> JsonResponse:
    run = access.run(request, pk)
    Run.want_progress([run])  # asked every 2 s by an open page: its observer reads the figures that often
    return JsonResponse(
        {
            "id": run.pk,
            "state": run.state,
            "state_label": run.get_state_display(),
            # Its times in the reader's zone, as the page shows them (the API keeps the stored UTC text).
            "explanation": clock.in_zone(run.explanation, timezone.get_current_timezone()),
            "progress": run.live_progress(),
            "final": run.is_final,
        }
    )


@login_required
@require_POST
def run_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    run = access.run(request, pk)
    access.require_change(request, run.team)
    stopping.cancel(run)
    return redirect("run_detail", pk=run.pk)


@login_required
def run_raw(request: HttpRequest, pk: int) -> HttpResponse:
    run = access.run(request, pk)
    response = HttpResponse(run.raw_output, content_type="text/plain; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="benchweb-run-{run.pk}.txt"'
    return response


# The runs list shows this many, newest first; the CSV download has every run its filters select.
LISTED_RUNS = 100


@login_required
def run_list(request: HttpRequest) -> HttpResponse:
    """The team's runs with the API list's filters (disk, state, trigger, steady, finished after and before),
    and the same selection as CSV."""
    team = access.team(request)
    asked = QueryDict(mutable=True)
    for name, values in request.GET.lists():
        if kept := [value for value in values if value.strip()]:
            asked.setlist(name, kept)
    filters = RunFilter(data=asked)
    runs: list[Run] = []
    problems = {}
    if filters.is_valid():
        selected = filters.apply(Run.objects.filter(team=team)).select_related("disk__host")
        runs = list(selected.defer(*Run.BULKY_FIELDS).order_by("-created_at", "-pk")[: LISTED_RUNS + 1])
    else:
        problems = {name: " ".join(map(str, errors)) for name, errors in filters.errors.items()}
    context = {
        "runs": runs[:LISTED_RUNS],
        "more": len(runs) > LISTED_RUNS,
        "problems": problems,
        "asked": asked,
        "query": asked.urlencode(),
        "disks": Disk.objects.filter(team=team).select_related("host"),
        "states": Run.State.choices,
        "triggers": Run.Trigger.choices,
        "steady_choices": [
            (steady.STEADY, "steady"),
            (steady.NOT_STEADY, "not steady"),
            (steady.NOT_CHECKED, "not checked"),
        ],
    }
    return render(request, "jobs/runs/run_list.html", context)
