"""The pages' downloads and printable reports: runs, a run's samples and a sweep's points as CSV, a disk's
compliance, a comparison and a sweep as a report that prints cleanly to PDF (the evidence pack a user sends to the
vendor)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, StreamingHttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET

from jobs import access, clock, limits, links
from jobs.exports import downloads, drawing, report
from jobs.models import RunSet
from jobs.results import compare, compliance
from jobs.runs.api import RunFilter
from jobs.sets import facts as set_facts
from jobs.sets import group_history
from jobs.sets.forms import rule_form


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


@login_required
@require_GET
def run_telemetry_csv(request: HttpRequest, pk: int) -> StreamingHttpResponse:
    return downloads.telemetry(access.run(request, pk))


@login_required
@require_GET
def set_points_csv(request: HttpRequest, pk: int) -> StreamingHttpResponse:
    return downloads.set_points(request, access.run_set(request, pk))


@login_required
@require_GET
def set_report(request: HttpRequest, pk: int) -> HttpResponse:
    """A sweep's plan, knees, limits, rule, points and its two curves, ready to print, under the knee rule its
    page's address asks for (?iops_growth=&p99_growth=)."""
    run_set = access.run_set(request, pk)
    if run_set.kind == RunSet.Kind.GROUP:
        return _group_report(request, run_set)
    form = rule_form(request.GET)
    if form.is_bound and not form.is_valid():
        return _refused(form.problems())
    context = {**_made(request, timezone.now()), **set_facts.page(run_set, form.rule())}
    series = set_facts.series(run_set, context["result"])
    curves = series.get("curves") or []
    context |= {
        "along": drawing.along_axis(curves, series.get("axis_name") or ""),
        "latency": drawing.latency_against_iops(curves),
        "bars": None if series.get("axis") else drawing.bars(
            [(p["label"], "", p.get("iops"), p.get("limit_iops")) for p in series.get("points", [])]
        ),
        "report_zone": timezone.get_current_timezone_name(),
        "csv_url": reverse("set_points_csv", args=[run_set.pk]),
        "page_url": f"{reverse('set_detail', args=[run_set.pk])}{'?' if request.GET else ''}{request.GET.urlencode()}",
    }  # fmt: skip
    context["csv_address"] = links.absolute(context["csv_url"], request)
    return render(request, "jobs/exports/sweep.html", context)


def _group_report(request: HttpRequest, run_set: RunSet) -> HttpResponse:
    """A group's report: its totals with their windows against its limit, its spreads, its members, and its series'
    totals over time as shares of their limits."""
    context = {**_made(request, timezone.now()), **set_facts.group_page(run_set)}
    limit = group_history.limit_of(run_set, context["members"])
    points = group_history.history(run_set)["points"] if run_set.is_final else []
    shares = [(p["ms"], p["share"]) for p in points if p["share"] is not None and p["ms"] is not None]
    all_running = (context["result"].get("totals") or {}).get("all_running") or {}
    context |= {
        "member_rows": [(member, group_history.member_figures(member)) for member in context["members"]],
        "limit": limit,
        "share_text": group_history.share_text(all_running.get("iops"), limit.get("iops")),
        "history": points,
        "chart": drawing.over_time(shares, PROMISE_SHARE, timezone.get_current_timezone()),
        "promise_percent": f"{PROMISE_SHARE * 100:g}",
        "report_zone": timezone.get_current_timezone_name(),
        "csv_url": reverse("set_points_csv", args=[run_set.pk]),
        "page_url": reverse("set_detail", args=[run_set.pk]),
    }
    context["csv_address"] = links.absolute(context["csv_url"], request)
    return render(request, "jobs/exports/group.html", context)


# A group's report draws its series' totals against this share of their limits, as the compliance report does.
PROMISE_SHARE = 1 - compliance.DEFAULT_TOLERANCE / 100


@login_required
@require_GET
def disk_report(request: HttpRequest, pk: int) -> HttpResponse:
    """A disk's compliance over a period (the Compliance card's query: period or since/until, profile,
    tolerance), ready to print: ?runs=all lists every run of the period instead of the misses."""
    disk = access.disk(request, pk)
    try:
        query = compliance.parse(request.GET)
    except compliance.BadRequest as exc:
        return _refused(f"{exc.parameter}: {exc}")
    found = compliance.disk_compliance(disk, query)
    streak = found["longest_streak"]
    streak["first"], streak["last"] = _moment(streak["from"]), _moment(streak["to"])
    compliance.worst_hour_here(found, timezone.get_current_timezone(), timezone.now())
    misses_only = request.GET.get("runs", "misses") != "all"
    lines, listed_of = report.run_lines(disk, query, misses_only=misses_only)
    now = timezone.now()
    since, until = report.period(found, now)
    disk_limits, limits_error = disk.limits_or_reason()
    csv_query = {"disk": disk.pk, **({"finished_after": _iso(query.since)} if query.since else {}),
                 **({"finished_before": _iso(query.until)} if query.until else {})}  # fmt: skip
    context = {
        **_made(request, now),
        "disk": disk,
        "disk_type": next((t.label for t in limits.disk_types() if t.id == disk.disk_type), disk.disk_type),
        "limits": disk_limits,
        "limits_error": limits_error,
        "c": found,
        "since": since,
        "until": until,
        "first_run": _moment(found["first_run_at"]),
        "last_run": _moment(found["last_run_at"]),
        "chart": report.chart(disk, query, timezone.get_current_timezone()),
        "report_zone": timezone.get_current_timezone_name(),
        "lines": lines,
        "listed_of": listed_of,
        "misses_only": misses_only,
        "measured_in": report.measured_in(disk, query),
        "csv_url": f"{reverse('runs_csv')}?{urlencode(csv_query)}",
    }
    context["csv_address"] = links.absolute(context["csv_url"], request)
    return render(request, "jobs/exports/compliance.html", context)


@login_required
@require_GET
def compare_report(request: HttpRequest) -> HttpResponse:
    """The Compare page's comparison (its query: ?disks= or ?runs=, and the Statistics card's), ready to print."""
    found = compare.chosen(access.team(request), request.GET)
    if found["problem"] or not found["groups"]:
        return _refused(found["problem"] or "Pick 2 to 8 disks (?disks=3,7) or runs (?runs=12,15) to compare.")
    columns = found["groups"][0].columns
    rows = [(c.label, c.detail, c.measured, c.theoretical) for c in columns] if not found["by_disk"] else [
        (f"{c.label} · {g.title}", c.detail, c.measured, c.theoretical) for g in found["groups"] for c in g.columns
    ]  # fmt: skip
    sources: dict[str, dict[str, Any] | None] = {}
    for group in found["groups"]:
        for column in group.columns:
            if column.run is not None:
                sources.setdefault(column.label, report.limit_source(column.run.limits_snapshot))
    context = {**_made(request, timezone.now()), **found, "bars": drawing.bars(rows), "sources": sources}
    return render(request, "jobs/exports/comparison.html", context)


def _made(request: HttpRequest, now: datetime) -> dict[str, Any]:
    """Who made the report, for which team, and when (in the reader's zone and in UTC)."""
    return {"generated_at": now, "generated_utc": clock.utc_text(now), "generated_by": request.user,
            "team": access.team(request)}  # fmt: skip


def _refused(problem: str) -> HttpResponse:
    return HttpResponseBadRequest(f"No report was made. {problem}", content_type="text/plain; charset=utf-8")


def _moment(iso: str | None) -> datetime | None:
    return datetime.fromisoformat(iso) if iso else None


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")
