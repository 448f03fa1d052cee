"""Profiles: the presets and the team's own, with the command each would send."""

from __future__ import annotations

import shlex
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import (
    Q,
)
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET

from jobs import access
from jobs.models import Profile
from jobs.profiles.forms import ProfileForm, unsaved_copy
from jobs.sets import facts as set_facts
from jobs.tools import sweep_plan
from jobs.tools.fio import build_fio_job
from jobs.tools.ndisk import build_ndisk_argv
from jobs.tools.options import ToolOptionError
from jobs.units import short_size

# The sample target of the profile previews: what a run on a directory target would be sent.
SAMPLE_TARGET = "/data/bench"


SAMPLE_RUN_DIR = "/home/you/.benchweb/runs/00000000-0000-4000-8000-000000000000"


def profile_line(profile: Profile) -> str:
    if profile.tool == Profile.Tool.NDISK64:
        return (
            f"ndisk64 {profile.pattern} {short_size(profile.block_size_bytes)}, {profile.read_percent}% reads, "
            f"{profile.jobs} processes, {profile.runtime_s} s"
        )
    mix = f" {profile.read_percent}% reads" if profile.rw in (Profile.RW.RW, Profile.RW.RANDRW) else ""
    fill = f", after a fill ×{profile.precondition_passes}" if profile.precondition else ""
    return (
        f"fio {profile.rw}{mix} {short_size(profile.block_size_bytes)} QD{profile.iodepth}, {profile.jobs} "
        f"jobs, {profile.runtime_s} s{fill}"
    )


def command_preview(params: dict[str, Any]) -> str:
    """The exact job file and command, or ndisk64 command line, a run on the sample target would send."""
    if params["tool"] == Profile.Tool.NDISK64:
        return shlex.join(build_ndisk_argv(params, SAMPLE_TARGET, "directory", SAMPLE_RUN_DIR))
    job = build_fio_job(params, SAMPLE_TARGET, "directory", SAMPLE_RUN_DIR, readonly=False)
    return f"{job.argv_quoted()}\n\n# {job.jobfile_path}\n{job.jobfile}"


@login_required
def profile_list(request: HttpRequest) -> HttpResponse:
    team = access.team(request)
    profiles = Profile.objects.filter(Q(team=team) | Q(team__isnull=True))
    rows = [(profile, _listed_line(profile)) for profile in profiles]
    context = {
        "presets": [r for r in rows if r[0].builtin],
        "own": [r for r in rows if not r[0].builtin],
        "can_change": access.can_change(request, team),
    }
    return render(request, "jobs/profiles/profile_list.html", context)


def _listed_line(profile: Profile) -> str:
    sweep = sweep_words(profile)
    return f"{profile_line(profile)}; a sweep of {sweep}" if sweep else profile_line(profile)


@login_required
def profile_detail(request: HttpRequest, pk: int) -> HttpResponse:
    profile = access.profile(request, pk)
    try:
        preview, preview_error = command_preview(profile.parameters()), None
    except ToolOptionError as exc:
        preview, preview_error = None, str(exc)
    team = access.team(request)
    context = {
        "profile": profile,
        "line": profile_line(profile),
        "preview": preview,
        "preview_error": preview_error,
        "sweep": sweep_words(profile),
        "sample_target": SAMPLE_TARGET,
        "can_change": access.can_change(request, team),
    }
    return render(request, "jobs/profiles/profile_detail.html", context)


@login_required
def profile_edit(request: HttpRequest, pk: int | None = None) -> HttpResponse:
    team = access.team(request)
    profile = access.profile(request, pk) if pk else Profile(team=team)
    if profile.builtin:
        messages.info(request, "Built-in presets are read-only: copy this one to change it.")
        return redirect("profile_detail", pk=profile.pk)
    return _profile_form(request, profile, editing=bool(pk))


@login_required
def profile_copy(request: HttpRequest, pk: int) -> HttpResponse:
    """The new-profile form filled in from another profile: nothing is stored until Save."""
    source = access.profile(request, pk)
    return _profile_form(request, unsaved_copy(source, access.team(request)), source=source)


def _profile_form(
    request: HttpRequest, profile: Profile, *, editing: bool = False, source: Profile | None = None
) -> HttpResponse:
    team = access.team(request)
    form = ProfileForm(request.POST or None, instance=profile, team=team)
    if request.method == "POST":
        access.require_change(request, team)
        if form.is_valid():
            profile = form.save()
            messages.success(request, f"Profile {profile.name} saved.")
            return redirect("profile_detail", pk=profile.pk)
    context = {
        "form": form,
        "profile": profile if editing else None,
        "source": source,
        "sample_target": SAMPLE_TARGET,
        "can_change": access.can_change(request, team),
    }
    return render(request, "jobs/profiles/profile_form.html", context)


@login_required
@require_GET
def profile_preview(request: HttpRequest) -> JsonResponse:
    """The profile form's job file or command as the user types; errors name the field."""
    form = ProfileForm(request.GET, team=access.team(request))
    form.is_valid()
    errors = {
        name: " ".join(str(e) for e in errs) for name, errs in form.errors.items() if name not in ("name", "__all__")
    }
    if errors:
        return JsonResponse({"errors": errors})
    try:
        return JsonResponse({"text": command_preview(form.instance.parameters()), "plan": sweep_words(form.instance)})
    except ToolOptionError as exc:
        return JsonResponse({"errors": {exc.field: str(exc)}})


def sweep_words(profile: Profile) -> str:
    """A sweep profile's axes, points and time: 'iodepth 1-256 x2: 9 points × 1 min = 9 min'; '' for one run."""
    if not profile.is_sweep:
        return ""
    try:
        plan = profile.sweep()
    except sweep_plan.SweepError as exc:
        return f"This sweep cannot be planned: {exc}"
    return f"{set_facts.plan_axes_words(plan.axes, profile.tool)}: {sweep_plan.plan_text(plan)}"
