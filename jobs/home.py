"""The start page (the team's hosts and disks with their limits) and the health check."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from jobs import access, presets
from jobs.models import Disk, Host, Profile, Run
from jobs.teams import membership as teams


@login_required
def home(request: HttpRequest) -> HttpResponse:
    team = teams.current_team(request)
    hosts = Host.objects.filter(team=team).prefetch_related("disks") if team else Host.objects.none()
    disks = Disk.objects.filter(team=team).select_related("host") if team else Disk.objects.none()
    rows = [(disk, *disk.limits_or_reason()) for disk in disks]
    context = {"hosts": hosts, "disk_rows": rows, "can_change": team is not None and access.can_change(request, team)}
    if team and not Run.objects.filter(team=team).exists():
        context["next_step"] = _next_step(list(hosts), [disk for disk, *_ in rows])
    return render(request, "jobs/home.html", context)


def _next_step(hosts: list[Host], disks: list[Disk]) -> dict[str, Any]:
    """The first-run hint until the team's first run: register a host, add a disk, approve the host's key (no
    run can log in before), run the quick check on a disk it can run on (Disk.refusal_for, the rule a run is
    refused by). The template words it for the user's role."""
    if not hosts:
        return {"step": "host"}
    if not disks:
        return {"step": "disk", "host": hosts[0]}
    quick = Profile.objects.filter(team=None, name=presets.QUICK_CHECK).first()
    runnable = [disk for disk in disks if quick and disk.refusal_for(quick) is None]
    disk = (runnable or disks)[0]
    if not disk.host.has_pinned_key:
        return {"step": "key", "disk": disk, "host": disk.host}
    return {"step": "run", "disk": disk, "quick": quick if runnable else None}


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"status": "ok"})
