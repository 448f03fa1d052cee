"""The two CSV downloads as responses, the same for a page and the API: what they select and what they are called."""

from __future__ import annotations

from django.http import HttpRequest, StreamingHttpResponse
from django.urls import reverse
from django.utils import timezone

from jobs import links
from jobs.exports import tables
from jobs.models import Disk, Run, Team
from jobs.runs.api import RunFilter


def runs(request: HttpRequest, team: Team, filters: RunFilter) -> StreamingHttpResponse:
    """The team's runs the (validated) filters select; named after the disk when they select one."""
    selected = filters.apply(Run.objects.filter(team=team))
    disk_id = filters.validated_data.get("disk")
    disk = Disk.objects.filter(team=team, pk=disk_id).values_list("label", flat=True).first() if disk_id else None
    runs_url = links.absolute(reverse("run_detail", args=[0]), request).removesuffix("0/")
    name = tables.filename("runs", disk or team.name, day=timezone.now())
    return tables.streamed(tables.run_rows(selected, runs_url), name)


def samples(run: Run) -> StreamingHttpResponse:
    name = tables.filename(f"run-{run.pk}-samples", run.disk.label, day=run.started_at or run.created_at)
    return tables.streamed(tables.sample_rows(run), name)
