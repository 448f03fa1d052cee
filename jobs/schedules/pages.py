"""Schedules: list, edit with a preview of the next fires, pause, run now, and the calendar."""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from jobs import access, scheduling
from jobs.models import Run, Schedule
from jobs.schedules import dispatcher
from jobs.schedules.forms import ScheduleForm


@login_required
def schedule_list(request: HttpRequest) -> HttpResponse:
    team = access.team(request)
    schedules = Schedule.objects.filter(team=team).prefetch_related("targets", "scheduleprofile_set__profile")
    last = {
        run.schedule_id: run
        for run in Run.objects.filter(schedule__team=team, state__in=Run.FINAL_STATES).order_by("finished_at")
    }
    rows = [(schedule, last.get(schedule.pk)) for schedule in schedules]
    return render(request, "jobs/schedule_list.html", {"rows": rows})


@login_required
def schedule_edit(request: HttpRequest, pk: int | None = None) -> HttpResponse:
    team = access.team(request)
    schedule = access.schedule(request, pk) if pk else None
    form = ScheduleForm(request.POST or None, instance=schedule, team=team)
    if request.method == "POST":
        access.require_change(request, team)
        if form.is_valid():
            saved = form.save()
            messages.success(request, f"Schedule {saved.name} saved; next fire {_when(saved.next_fire_at)}.")
            return redirect("schedule_list")
    return render(request, "jobs/schedule_form.html", {"form": form, "schedule": schedule})


def _when(moment: datetime | None) -> str:
    return timezone.localtime(moment).strftime("%Y-%m-%d %H:%M %Z") if moment else "none (outside its window)"


@login_required
@require_POST
def schedule_preview(request: HttpRequest) -> JsonResponse:
    """The next 10 fires and each target's start, for the form's live preview; errors name the field."""
    team = access.team(request)
    form = ScheduleForm(request.POST, team=team)
    if not form.is_valid():
        # 200 like the other live previews: an unfinished form is not a failed request (and logs no console error).
        return JsonResponse({"errors": {k: [str(m) for m in v] for k, v in form.errors.items()}})
    draft = form.save(commit=False)
    fires = scheduling.next_fires(draft.rule(), timezone.now(), 10)
    profiles = form.chosen_profiles()
    plan = dispatcher.plan_for(list(form.cleaned_data["targets"]), profiles, draft)
    zone = ZoneInfo(draft.timezone)
    return JsonResponse(
        {
            "fires": [
                {
                    "at": timezone.localtime(fire, zone).isoformat(),
                    "runs": [
                        {
                            "disk": str(p.disk),
                            "profile": p.profile.name,
                            "offset_s": p.offset_s,
                            "start": timezone.localtime(fire + timedelta(seconds=p.offset_s), zone).isoformat(),
                        }
                        for p in plan
                    ],
                }
                for fire in fires
            ]
        }
    )


@login_required
@require_POST
def schedule_toggle(request: HttpRequest, pk: int) -> HttpResponse:
    schedule = access.schedule(request, pk)
    access.require_change(request, schedule.team)
    schedule.enabled = not schedule.enabled
    schedule.save()
    messages.info(request, f"Schedule {schedule.name} {'resumed' if schedule.enabled else 'paused'}.")
    return redirect("schedule_list")


@login_required
@require_POST
def schedule_run_now(request: HttpRequest, pk: int) -> HttpResponse:
    schedule = access.schedule(request, pk)
    access.require_change(request, schedule.team)
    created = dispatcher.run_schedule_now(schedule, request.user)
    messages.success(request, f"{created} run(s) created for {schedule.name}, staggered as usual.")
    return redirect("schedule_list")


@login_required
def calendar(request: HttpRequest) -> HttpResponse:
    team = access.team(request)
    start = timezone.now().replace(minute=0, second=0, microsecond=0) - timedelta(hours=12)
    end = start + timedelta(days=7, hours=12)
    span = (end - start).total_seconds()
    lanes = dispatcher.calendar(team, start, end)
    for lane in lanes:
        for bar in lane["bars"]:
            bar.left = _pct(bar.start, start, span)
            bar.width = max(0.15, _pct(bar.end, start, span) - bar.left)
    midnights = [(start + timedelta(days=d)).replace(hour=0) for d in range(9)]
    ticks = [tick for tick in midnights if start <= tick <= end]
    return render(request, "jobs/calendar.html", {
        "lanes": lanes, "start": start, "end": end, "span": span, "now_pct": _pct(timezone.now(), start, span),
        "ticks": [(tick, _pct(tick, start, span)) for tick in ticks],
    })  # fmt: skip


def _pct(moment: datetime, start: datetime, span: float) -> float:
    return max(0.0, min(100.0, 100 * (moment - start).total_seconds() / span))
