"""The CSV downloads as responses, the same for a page and the API: what they select and what they are called."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.http import HttpRequest, StreamingHttpResponse
from django.urls import reverse
from django.utils import timezone

from jobs import links
from jobs.exports import tables
from jobs.models import Disk, Run, RunSet, Team
from jobs.runs.api import RunFilter
from jobs.sets import group_history, reading


def runs(request: HttpRequest, team: Team, filters: RunFilter) -> StreamingHttpResponse:
    """The team's runs the (validated) filters select; named after the disk when they select one."""
    selected = filters.apply(Run.objects.filter(team=team))
    disk_id = filters.validated_data.get("disk")
    disk = Disk.objects.filter(team=team, pk=disk_id).values_list("label", flat=True).first() if disk_id else None
    name = tables.filename("runs", disk or team.name, day=timezone.now())
    return tables.streamed(tables.run_rows(selected, _runs_url(request)), name)


def samples(run: Run) -> StreamingHttpResponse:
    name = tables.filename(f"run-{run.pk}-samples", run.disk.label, day=run.started_at or run.created_at)
    return tables.streamed(tables.sample_rows(run), name)


def telemetry(run: Run) -> StreamingHttpResponse:
    name = tables.filename(f"run-{run.pk}-telemetry", run.disk.label, day=run.started_at or run.created_at)
    return tables.streamed(tables.telemetry_rows(run), name)


def set_points(request: HttpRequest, run_set: RunSet) -> StreamingHttpResponse:
    """A sweep's points, one row each, from its result (its points so far while it runs); a group's members and
    totals (group_rows)."""
    if run_set.kind == RunSet.Kind.GROUP:
        name = tables.filename(f"group-{run_set.pk}-members", run_set.profile_name, day=run_set.created_at)
    else:
        name = tables.filename(f"sweep-{run_set.pk}-points", run_set.disk.label, day=run_set.created_at)
    return tables.streamed(set_rows(request, run_set), name)


def _group_rows(request: HttpRequest, run_set: RunSet) -> Iterator[list[Any]]:
    """A group's CSV rows: its members, its totals as its result stored them (none until it ended), its limit."""
    members = list(run_set.members.select_related("disk__host").order_by("set_index"))
    result = run_set.result if run_set.is_final and isinstance(run_set.result, dict) else {}
    limit = group_history.limit_of(run_set, members)
    return tables.group_rows(members, result, limit, _runs_url(request))


def set_rows(request: HttpRequest, run_set: RunSet) -> Iterator[list[Any]]:
    """The rows the set's CSV has, header first: a group's members and totals, a sweep's points."""
    if run_set.kind == RunSet.Kind.GROUP:
        return _group_rows(request, run_set)
    axes = [str(axis.get("field")) for axis in (run_set.plan or {}).get("axes", []) if isinstance(axis, dict)]
    return tables.point_rows(reading.result_of(run_set).get("points", []), axes, _runs_url(request))


def _runs_url(request: HttpRequest) -> str:
    """Where the run pages are, absolute: https://bench.example/runs/ (a run's is that, its id and /)."""
    return links.absolute(reverse("run_detail", args=[0]), request).removesuffix("0/")
