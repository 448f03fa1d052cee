"""The CSV downloads as responses, the same for a page and the API: what they select and what they are called."""

from __future__ import annotations

from django.http import HttpRequest, StreamingHttpResponse
from django.urls import reverse
from django.utils import timezone

from jobs import links
from jobs.exports import tables
from jobs.models import Disk, Run, RunSet, Team
from jobs.runs.api import RunFilter
from jobs.sets import reading


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


def set_points(request: HttpRequest, run_set: RunSet) -> StreamingHttpResponse:
    """A sweep's points, one row each, from its result (its points so far while it runs)."""
    axes = [str(axis.get("field")) for axis in (run_set.plan or {}).get("axes", []) if isinstance(axis, dict)]
    points = reading.result_of(run_set).get("points", [])
    name = tables.filename(f"sweep-{run_set.pk}-points", run_set.disk.label, day=run_set.created_at)
    return tables.streamed(tables.point_rows(points, axes, _runs_url(request)), name)


def _runs_url(request: HttpRequest) -> str:
    """Where the run pages are, absolute: https://bench.example/runs/ (a run's is that, its id and /)."""
    return links.absolute(reverse("run_detail", args=[0]), request).removesuffix("0/")
