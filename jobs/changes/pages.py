"""The team's Changes page: level shifts found in the disks' results, newest first, to mark expected, and the
annotations people add (also from a disk's page)."""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from jobs import access
from jobs.changes.forms import AnnotationForm
from jobs.models import Annotation, ChangePoint

SHOWN = 200
# The disk chart a change point links to: this long either side of it.
CHART_SPAN = timedelta(days=14)


@login_required
def changes(request: HttpRequest) -> HttpResponse:
    team = access.team(request)
    form = AnnotationForm(request.POST or None, team=team)
    if request.method == "POST":
        access.require_change(request, team)
        if form.is_valid():
            annotation = form.save(commit=False)
            annotation.created_by = request.user
            annotation.save()
            messages.success(request, f"Noted: {annotation.text}.")
            return _back(request)
    found = ChangePoint.objects.filter(team=team).select_related("disk__host")[:SHOWN]
    rows = [(change, _chart_link(change)) for change in found]
    notes = Annotation.objects.filter(team=team).select_related("disk__host", "host", "created_by")[:SHOWN]
    return render(
        request,
        "jobs/changes/changes.html",
        {"rows": rows, "annotations": notes, "form": form, "can_change": access.can_change(request, team)},
    )


@login_required
@require_POST
def change_point_expected(request: HttpRequest, pk: int) -> HttpResponse:
    change = access.owned(request, ChangePoint.objects.select_related("disk"), pk)
    access.require_change(request, change.team)
    if not change.expected:
        change.mark_expected(request.user, request.POST.get("text", "")[:300])
        messages.success(request, f"Marked expected: {change.describe()}. Detection now starts from it.")
    return _back(request)


@login_required
@require_POST
def annotation_delete(request: HttpRequest, pk: int) -> HttpResponse:
    annotation = access.owned(request, Annotation, pk)
    access.require_change(request, annotation.team)
    annotation.delete()
    messages.success(request, f"Removed the note “{annotation.text}”.")
    return _back(request)


def _chart_link(change: ChangePoint) -> str:
    """The disk's chart of the change's workload, CHART_SPAN either side of it."""
    query = {
        "range": "custom",
        "from": (change.at - CHART_SPAN).isoformat(),
        "to": (change.at + CHART_SPAN).isoformat(),
        "profile": change.profile_id or change.profile_name,
    }
    return f"{reverse('disk_detail', args=[change.disk_id])}?{urlencode(query)}#disk-charts"


def _back(request: HttpRequest) -> HttpResponse:
    """To the page the form was on (a disk's page or this one), never elsewhere."""
    wanted = request.POST.get("next", "")
    if wanted and url_has_allowed_host_and_scheme(wanted, {request.get_host()}, require_https=request.is_secure()):
        return redirect(wanted)
    return redirect("changes")
