"""A disk's page (charts, run now) and its registration, identity and limits preview; the disk-type catalog."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from jobs import access, limits, safety, units
from jobs.changes.forms import AnnotationForm
from jobs.disks import identity, precondition
from jobs.disks.facts import disk_facts
from jobs.disks.forms import DiskForm, PreconditionForm, RunNowForm, size_range
from jobs.models import SPEC_FIELDS, Alert, Disk
from jobs.runs import queueing
from jobs.sets import facts as set_facts
from jobs.sets import requesting
from jobs.shares.forms import ShareForm


@login_required
def disk_detail(request: HttpRequest, pk: int) -> HttpResponse:
    disk = access.disk(request, pk)
    form = RunNowForm(request.POST or None, disk=disk)
    if request.method == "POST":
        access.require_change(request, disk.team)
        if form.is_valid():
            profile = form.cleaned_data["profile"]
            try:
                if profile.is_set:
                    run_set = requesting.request_set(disk, profile, user=request.user)
                    return redirect("set_detail", pk=run_set.pk)
                run = queueing.request_run(disk, profile, user=request.user)
            except queueing.RunRefused as exc:
                form.add_error(exc.field if exc.field in form.fields else None, str(exc))
            else:
                return redirect("run_detail", pk=run.pk)
    can_change = access.can_change(request, disk.team)
    context = {
        **disk_facts(disk, request.GET),
        "form": form,
        "precondition_form": PreconditionForm(),
        "precondition_at": precondition.recorded_at(disk.precondition),
        "precondition_stale": precondition.stale_reason(disk),
        "annotation_form": AnnotationForm(team=disk.team, disk=disk) if can_change else None,
        "share_form": ShareForm() if can_change else None,
        "unresolved_alerts": disk.alerts.filter(state__in=Alert.UNRESOLVED).count(),
        "sweeps": set_facts.recent_sweeps(disk),
    }
    return render(request, "jobs/disks/disk_detail.html", context)


@login_required
@require_POST
def disk_precondition(request: HttpRequest, pk: int) -> HttpResponse:
    """Record a preconditioning done by hand, or clear the record (the button named clear)."""
    disk = access.disk(request, pk)
    access.require_change(request, disk.team)
    if "clear" in request.POST:
        precondition.clear(disk)
        messages.info(request, f"The preconditioning record of {disk.target_path} was cleared.")
        return redirect("disk_detail", pk=disk.pk)
    form = PreconditionForm(request.POST)
    if form.is_valid():
        try:
            precondition.record_by_hand(disk, at=form.cleaned_data["at"], how=form.cleaned_data["how"],
                                        user=request.user)  # fmt: skip
        except precondition.RecordError as exc:
            form.add_error(exc.field, str(exc))
    if form.errors:
        problems = " ".join(
            f"{form.fields[name].label}: {' '.join(str(error) for error in errors)}"
            for name, errors in form.errors.items()
        )
        messages.warning(request, f"Nothing was recorded. {problems}")
    else:
        messages.info(
            request, f"Preconditioning of {disk.target_path} recorded: runs on it carry no fresh-block warning."
        )
    return redirect("disk_detail", pk=disk.pk)


@login_required
def disk_edit(request: HttpRequest, pk: int | None = None, host_pk: int | None = None) -> HttpResponse:
    if pk:
        disk = access.disk(request, pk)
    else:
        assert host_pk is not None  # the new-disk URL names the host
        disk = Disk(host=access.host(request, host_pk))
    team = disk.host.team
    form = DiskForm(request.POST or None, instance=disk)
    if request.method == "POST":
        access.require_change(request, team)
        if form.is_valid():
            new_target = disk.pk is None or {"target_path", "kind"} & set(form.changed_data)
            disk = form.save()
            messages.success(request, f"Disk {disk.label} saved; its theoretical limits are on this page.")
            if new_target:
                _identify(request, disk, identity.identify_new_target(disk, request.user))
            return redirect("disk_detail", pk=disk.pk)
    context = {
        "form": form,
        "disk": disk,
        "host": disk.host,
        "types": _disk_types_json(),
        "can_change": access.can_change(request, team),
    }
    return render(request, "jobs/disks/disk_form.html", context)


@login_required
@require_POST
def disk_record_identity(request: HttpRequest, pk: int) -> HttpResponse:
    """Record what the target is now, e.g. after the disk was replaced on purpose."""
    disk = access.disk(request, pk)
    access.require_change(request, disk.team)
    try:
        identity.record_disk_identity(disk, request.user)
    except identity.IdentityUnavailable as exc:
        _identify(request, disk, str(exc))
    else:
        _identify(request, disk, "")
    return redirect("disk_detail", pk=disk.pk)


def _identify(request: HttpRequest, disk: Disk, problem: str) -> None:
    if problem:
        messages.warning(request, problem)
    else:
        messages.info(request, f"Identity of {disk.target_path} recorded: {safety.describe_identity(disk.identity)}.")


@login_required
@require_GET
def disk_limits_preview(request: HttpRequest) -> JsonResponse:
    """The limits the disk form's spec gives, as the user types; errors name the spec field."""
    access.team(request)
    form = DiskForm(request.GET, instance=Disk())
    form.is_valid()
    spec_fields = [*SPEC_FIELDS.values(), "throughput_unit"]
    errors = {name: " ".join(str(e) for e in form.errors[name]) for name in spec_fields if name in form.errors}
    if errors:
        return JsonResponse({"errors": errors})
    try:
        result = form.instance.limits()
    except limits.SpecError as exc:
        return JsonResponse({"errors": {SPEC_FIELDS.get(exc.field, "disk_type"): str(exc)}})
    return JsonResponse({"text": _limits_text(result)})


def _limits_text(result: limits.Limits) -> str:
    if result.iops is None and result.throughput_bytes_per_s is None:
        return "No limits: a custom spec without values. Give its IOPS and throughput to compare runs with them."
    unit = result.total_throughput_unit
    text = f"{units.format_iops_exact(result.iops)} · {limits.rate_text(result.throughput_bytes_per_s, unit)}"
    if result.burst_iops or result.burst_throughput_bytes_per_s:
        burst = [units.format_iops_exact(result.burst_iops)] if result.burst_iops else []
        if result.burst_throughput_bytes_per_s:
            burst.append(limits.rate_text(result.burst_throughput_bytes_per_s, unit))
        lasts = limits.breakdown(result)["burst"]["lasts"]
        text += f" (burst {' · '.join(burst)}{', ' + lasts if lasts else ''})"
    if result.capped_by_instance:
        text += f" — capped by the instance ({' and '.join(result.capped_by_instance)})"
    if result.iops and result.throughput_bytes_per_s:
        text += f"; {limits.crossover_text(result.iops, result.throughput_bytes_per_s, unit)}"
    return text


def _disk_types_json() -> dict[str, Any]:
    return {
        kind.id: {
            "label": kind.label,
            "range": size_range(kind),
            "size_required": kind.size_required,
            "inputs": kind.inputs,
        }
        for kind in limits.disk_types()
    }


@login_required
def disk_types(request: HttpRequest) -> HttpResponse:
    return render(request, "jobs/disks/disk_types.html", {"types": limits.disk_types()})
