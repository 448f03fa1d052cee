"""The team's hosts: list, register and edit, test the connection, scan and approve the host key."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import (
    Count,
    Q,
)
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from jobs import access, errors, ssh
from jobs.changes.forms import AnnotationForm
from jobs.hosts import connecting
from jobs.hosts.forms import HostForm
from jobs.models import Annotation, Host
from jobs.runs import sites


@login_required
def host_list(request: HttpRequest) -> HttpResponse:
    team = access.team(request)
    hosts = Host.objects.filter(team=team).annotate(disk_count=Count("disks"))
    return render(
        request, "jobs/hosts/host_list.html", {"hosts": hosts, "can_change": access.can_change(request, team)}
    )


@login_required
def host_edit(request: HttpRequest, pk: int | None = None) -> HttpResponse:
    team = access.team(request)
    host = access.host(request, pk) if pk else Host(team=team)
    form = HostForm(request.POST or None, instance=host, team=team)
    if request.method == "POST":
        access.require_change(request, team)
        if form.is_valid():
            host = form.save(user=request.user)
            messages.success(
                request,
                f"Host {host.name} saved."
                + ("" if host.has_pinned_key else " Next: scan its host key, compare the fingerprint and approve it."),
            )
            if sites.unserved(host.site):
                messages.warning(request, sites.status(host.site).text)
            return redirect("host_detail", pk=host.pk)
    context = {
        "form": form,
        "host": host if pk else None,
        "can_change": access.can_change(request, team),
        "site_status": sites.status(str(form["site"].value() or "").strip()),
        "site_workers": sites.browser_data(),
    }
    return render(request, "jobs/hosts/host_form.html", context)


@login_required
def host_detail(request: HttpRequest, pk: int) -> HttpResponse:
    host = access.host(request, pk)
    notes = Annotation.objects.filter(Q(host=host) | Q(disk__host=host), team=host.team).select_related("disk", "host")
    form = AnnotationForm(team=host.team, host=host) if access.can_change(request, host.team) else None
    context = {"host": host, "disks": host.disks.all(), "host_annotations": notes[:20], "annotation_form": form,
               "site_status": sites.status(host.site)}  # fmt: skip
    return render(request, "jobs/hosts/host_detail.html", context)


@login_required
def host_test(request: HttpRequest, pk: int) -> HttpResponse:
    host = access.host(request, pk)
    result = None
    if request.method == "POST":
        access.require_change(request, host.team)
        result = connecting.connection_test(host, request.user)
    context = {
        "host": host,
        "result": result,
        "command": connecting.CONNECTION_TEST,
        "can_change": access.can_change(request, host.team),
    }
    return render(request, "jobs/hosts/host_test.html", context)


@login_required
@require_POST
def host_scan_key(request: HttpRequest, pk: int) -> HttpResponse:
    host = access.host(request, pk)
    access.require_change(request, host.team)
    try:
        key = connecting.scan_host_key(host, request.user)
    except ssh.SSHError as exc:
        messages.error(request, f"Could not read the host key of {host.name}: {exc}")
    else:
        if host.has_pinned_key and key.fingerprint != host.host_key_fingerprint:
            messages.warning(
                request,
                "The host presents a DIFFERENT key from the approved one. Approve it only if "
                "you know why it changed (reinstall, new host); otherwise someone may be in between.",
            )
        else:
            messages.info(request, "Compare the fingerprint below with the host's own (ssh-keygen -lf on it).")
    return redirect("host_detail", pk=host.pk)


@login_required
@require_POST
def host_approve_key(request: HttpRequest, pk: int) -> HttpResponse:
    host = access.host(request, pk)
    access.require_change(request, host.team)
    try:
        connecting.approve_host_key(host, request.user, request.POST.get("fingerprint", ""))
    except errors.FieldRefused as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Host key {host.host_key_fingerprint} approved and pinned.")
    return redirect("host_detail", pk=host.pk)
