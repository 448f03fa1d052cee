"""The start page (the team's hosts and disks with their limits) and the health check."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from jobs.models import Disk, Host
from jobs.teams import membership as teams


@login_required
def home(request: HttpRequest) -> HttpResponse:
    team = teams.current_team(request)
    hosts = Host.objects.filter(team=team).prefetch_related("disks") if team else Host.objects.none()
    disks = Disk.objects.filter(team=team).select_related("host") if team else Disk.objects.none()
    rows = [(disk, *disk.limits_or_reason()) for disk in disks]
    return render(request, "jobs/home.html", {"hosts": hosts, "disk_rows": rows})


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"status": "ok"})
