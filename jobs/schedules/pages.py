"""Schedules: list, edit with a preview of the next fires, pause, run now, and the calendar."""

from __future__ import annotations

from datetime import date, datetime, time, timedelta, tzinfo
from itertools import pairwise
from zoneinfo import ZoneInfo

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from jobs import access, clock, scheduling
from jobs.models import Run, Schedule
from jobs.schedules import calendar as schedule_calendar
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
    return render(request, "jobs/schedules/schedule_list.html", {"rows": rows})


@login_required
def schedule_edit(request: HttpRequest, pk: int | None = None) -> HttpResponse:
    team = access.team(request)
    schedule = access.schedule(request, pk) if pk else None
    form = ScheduleForm(request.POST or None, instance=schedule, team=team)
    if request.method == "POST":
        access.require_change(request, team)
        if form.is_valid():
            saved = form.save()
            messages.success(request, f"Schedule {saved.name} saved; next fire {_when(saved.next_fire_at, saved)}.")
            # Saved all the same: overlapping runs are legal (they take turns on a disk), only worth knowing.
            for overlap in schedule_calendar.overlaps(saved):
                messages.warning(request, overlap.message(timezone.get_current_timezone()))
            return redirect("schedule_list")
    overlaps = schedule_calendar.overlaps(schedule) if schedule and request.method == "GET" else []
    here = timezone.get_current_timezone()
    return render(request, "jobs/schedules/schedule_form.html", {
        "form": form, "schedule": schedule, "overlaps": [overlap.message(here) for overlap in overlaps],
    })  # fmt: skip


def _when(moment: datetime | None, schedule: Schedule) -> str:
    if moment is None:
        return "none (outside its window)"
    here = timezone.get_current_timezone()
    there = clock.show_also(moment, here, ZoneInfo(schedule.timezone))
    return clock.show(moment, here, clock.MINUTES) + (f" ({there} in the schedule's zone)" if there else "")


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
    if editing := request.GET.get("schedule", ""):
        # The schedule being edited is not compared with itself as saved.
        draft.pk = access.schedule(request, int(editing)).pk if editing.isdigit() else None
    fires = scheduling.next_fires(draft.rule(), timezone.now(), 10)
    profiles = form.chosen_profiles()
    plan = dispatcher.plan_for(list(form.cleaned_data["targets"]), profiles, draft)
    # In the reader's zone like every other time they see, and in the schedule's own when it reads differently.
    here, there = timezone.get_current_timezone(), ZoneInfo(draft.timezone)
    return JsonResponse(
        {
            "zone": str(here),
            "schedule_zone": draft.timezone,
            "warnings": [overlap.message(here) for overlap in schedule_calendar.overlaps(draft, plan)],
            "fires": [
                {
                    "at": fire.astimezone(here).isoformat(),
                    "at_text": clock.show(fire, here, clock.MINUTES),
                    "at_schedule_text": clock.show_also(fire, here, there),
                    "runs": [
                        {
                            "disk": str(p.disk),
                            "profile": p.profile.name,
                            "offset_s": p.offset_s,
                            "start": (fire + timedelta(seconds=p.offset_s)).astimezone(here).isoformat(),
                            "start_text": clock.show(fire + timedelta(seconds=p.offset_s), here, "%H:%M:%S"),
                        }
                        for p in plan
                    ],
                }
                for fire in fires
            ],
        }
    )


@login_required
@require_POST
def schedule_toggle(request: HttpRequest, pk: int) -> HttpResponse:
    schedule = access.schedule(request, pk)
    access.require_change(request, schedule.team)
    schedule.enabled = not schedule.enabled
    with transaction.atomic():
        schedule.save()
        stopped = 0 if schedule.enabled else dispatcher.stop_unstarted(schedule)
    cancelled = f" {stopped} run(s) of its next fire, not yet started, were cancelled." if stopped else ""
    messages.info(request, f"Schedule {schedule.name} {'resumed' if schedule.enabled else 'paused'}.{cancelled}")
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
    """The next 7 days (from 12 hours ago), or one day in detail with ?day=YYYY-MM-DD, in the reader's zone."""
    team = access.team(request)
    zone = timezone.get_current_timezone()
    now = timezone.now()
    day, day_error = _day(request.GET.get("day"))
    if day:
        start = datetime.combine(day, time(0), tzinfo=zone)
        end = datetime.combine(day + timedelta(days=1), time(0), tzinfo=zone)
        cap = schedule_calendar.MAX_BARS_PER_LANE_DAY
    else:
        start = now.replace(minute=0, second=0, microsecond=0) - timedelta(hours=12)
        end = start + timedelta(days=7, hours=12)
        cap = schedule_calendar.MAX_BARS_PER_LANE
    span = (end - start).total_seconds()
    lanes = schedule_calendar.calendar(team, start, end, cap=cap)
    for lane in lanes:
        for bar in lane.bars:
            # No minimum here: the stylesheet gives short runs a minimum width, the tooltip their true length.
            bar.left = _pct(bar.start, start, span)
            bar.width = _pct(bar.end, start, span) - bar.left
        # Where a capped lane stops, and the day view that shows what follows.
        lane.cut_day = timezone.localtime(lane.shown_until, zone).date() if lane.left_out and lane.shown_until else None
    return render(request, "jobs/schedules/calendar.html", {
        "lanes": lanes, "start": start, "end": end, "span": span, "day": day, "day_error": day_error,
        "now_pct": _pct(now, start, span) if start <= now <= end else None, "cap": cap,
        "segments": _hour_segments(start, end, zone, span) if day else _day_segments(start, end, zone, span),
        # Lines at the local midnights (the week) or at every third hour (a day).
        "lines": [pct for pct in (_pct(m, start, span) for m in _lines(start, end, zone, day)) if 0 < pct < 100],
        "previous_day": day - timedelta(days=1) if day else None, "next_day": day + timedelta(days=1) if day else None,
    })  # fmt: skip


def _day(text: str | None) -> tuple[date | None, str]:
    if not text:
        return None, ""
    example = f"{timezone.localdate():%Y-%m-%d}"
    try:
        day = date.fromisoformat(text)
    except ValueError:
        return None, f"day: {text[:20]!r} is not a date; give one as YYYY-MM-DD, e.g. {example}."
    if not CALENDAR_YEARS[0] <= day.year <= CALENDAR_YEARS[1]:
        return None, f"day: give a date from {CALENDAR_YEARS[0]} to {CALENDAR_YEARS[1]}, e.g. {example}."
    return day, ""


# The day view's range: wide enough for any schedule's history and plans, and far from date's own limits.
CALENDAR_YEARS = (2000, 2199)


def _lines(start: datetime, end: datetime, zone: tzinfo, day: date | None) -> list[datetime]:
    if day:
        return [datetime.combine(day, time(hour), tzinfo=zone) for hour in range(3, 24, 3)]
    return _midnights(start, end, zone)


def _midnights(start: datetime, end: datetime, zone: tzinfo) -> list[datetime]:
    first = timezone.localtime(start, zone).date()
    days = (end - start).days + 2
    return [datetime.combine(first + timedelta(days=d), time(0), tzinfo=zone) for d in range(days)]


# A day cut by the week view's edges is labelled only from this many hours, with its number alone below 12 hours.
LABEL_MIN_HOURS = 8
FULL_LABEL_HOURS = 12


def _day_segments(start: datetime, end: datetime, zone: tzinfo, span: float) -> list[dict[str, object]]:
    """Each local day of the week view as a stretch of the axis, labelled in its middle: labels never overlap
    and never leave the track, whatever the hour the view starts at."""
    segments = []
    for midnight in _midnights(start, end, zone):
        begin, finish = max(start, midnight), min(end, midnight + timedelta(days=1))
        hours = (finish - begin).total_seconds() / 3600
        if hours <= 0:
            continue
        left = _pct(begin, start, span)
        segments.append({
            "left": left, "width": _pct(finish, start, span) - left, "day": midnight.date(),
            "label": hours >= LABEL_MIN_HOURS, "short": hours < FULL_LABEL_HOURS,
        })  # fmt: skip
    return segments


def _hour_segments(start: datetime, end: datetime, zone: tzinfo, span: float) -> list[dict[str, object]]:
    """The day view's axis: stretches of three hours, each labelled with its first hour (on the wall clock, so a
    day when the clocks change has one stretch shorter or longer)."""
    day = timezone.localtime(start, zone).date()
    marks = [datetime.combine(day, time(hour), tzinfo=zone) for hour in range(0, 24, 3)] + [end]
    return [
        {"left": _pct(a, start, span), "width": _pct(b, start, span) - _pct(a, start, span), "hour": f"{a:%H:%M}",
         "label": True, "hour_mark": True}
        for a, b in pairwise(marks)
    ]  # fmt: skip


def _pct(moment: datetime, start: datetime, span: float) -> float:
    return max(0.0, min(100.0, 100 * (moment - start).total_seconds() / span))
