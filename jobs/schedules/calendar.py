"""The calendar and the overlap warnings: planned runs as bars in time, one lane per disk, flagged where two
overlap on one host.

The calendar page draws the bars; saving a schedule (the form and the API) warns about the same overlaps, so
what the calendar flags and what a save warns about are the same bars (`planned_bars`) under the same rule: two
bars on one host overlap when one starts before the other ends."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, tzinfo
from typing import Any

from django.db.models import Prefetch
from django.utils import timezone

from jobs import clock, runners, scheduling, units
from jobs.models import Disk, Run, Schedule, ScheduleProfile
from jobs.schedules import dispatcher

# A lane draws at most this many bars; beyond, it says how many it left out and links to the day view.
MAX_BARS_PER_LANE = 400
# The day view draws more: every run of a schedule that fires each minute (1,440 a day on one disk).
MAX_BARS_PER_LANE_DAY = 1500
# At most this many fires of one schedule are walked for one view or one overlap check.
MAX_FIRES = 20_000
# A save warns about overlaps in the next seven days, the calendar's span.
OVERLAP_HORIZON = timedelta(days=7)


@dataclass
class Bar:
    start: datetime
    end: datetime
    title: str
    css: str
    host_id: int
    disk_id: int
    overlaps: bool = False
    what: str = ""  # planned bars: "host:disk profile"
    host: str = ""  # planned bars: the host's name
    left: float = 0.0  # where the page draws it, in % of the track
    width: float = 0.0

    @property
    def duration(self) -> str:
        """The bar's true length for its tooltip: a short run is drawn wider than it is."""
        return units.format_duration(round((self.end - self.start).total_seconds()))


@dataclass
class Lane:
    disk: Disk
    bars: list[Bar] = field(default_factory=list)
    total: int = 0  # bars before the cap
    cut_day: date | None = None  # a capped lane: the day view that shows where it stops

    @property
    def left_out(self) -> int:
        return self.total - len(self.bars)

    @property
    def shown_until(self) -> datetime | None:
        return max(bar.end for bar in self.bars) if self.bars else None

    @property
    def total_text(self) -> str:
        return f"{self.total:,}"


@dataclass(frozen=True)
class Overlap:
    """The first moment two schedules' planned runs on one host run at once."""

    schedule_id: int
    schedule_name: str
    host: str
    at: datetime
    mine: str  # "disk: profile" of the saved schedule
    theirs: str

    def message(self, zone: tzinfo) -> str:
        return (
            f"Overlaps schedule {self.schedule_name} on host {self.host}: first at "
            f"{clock.show(self.at, zone, clock.MINUTES)} ({self.mine} and {self.theirs} planned at once). Runs "
            f"on one host disturb each other's numbers; stagger or move one of them (the calendar shows both)."
        )


def planned_bars(schedule: Schedule, planned: list[dispatcher.PlannedRun], start: datetime, end: datetime) -> list[Bar]:
    """A bar for every planned run of the schedule's fires from `start` to `end`, of its expected duration."""
    lengths = {
        p.profile.pk: timedelta(seconds=runners.expected_seconds(p.profile.parameters()) + dispatcher.RUN_OVERHEAD_S)
        for p in planned
    }
    bars = []
    for fire_time in scheduling.fires_between(schedule.rule(), start, end)[:MAX_FIRES]:
        for p in planned:
            begin = fire_time + timedelta(seconds=p.offset_s)
            what = f"{p.disk.host.name}:{p.disk.label} {p.profile.name}"
            bars.append(Bar(begin, begin + lengths[p.profile.pk], f"{schedule.name}: {what}", "planned",
                            p.disk.host_id, p.disk.pk, what=what, host=p.disk.host.name))  # fmt: skip
    return bars


def _with_plans(schedules: Any) -> Any:
    return schedules.prefetch_related(
        Prefetch("targets", queryset=Disk.objects.select_related("host")),
        Prefetch("scheduleprofile_set", queryset=ScheduleProfile.objects.select_related("profile")),
    )


def calendar(team: Any, start: datetime, end: datetime, *, cap: int = MAX_BARS_PER_LANE) -> list[Lane]:
    """One lane per disk: planned runs of enabled schedules as bars of their expected duration, plus the
    runs that happened (coloured by outcome); bars that overlap another on the same host are flagged. Each
    lane keeps its first `cap` bars and counts the rest."""
    now = timezone.now()
    disks = list(Disk.objects.filter(team=team).select_related("host").order_by("host__name", "label"))
    lanes = {disk.pk: Lane(disk) for disk in disks}
    for schedule in _with_plans(Schedule.objects.filter(team=team, enabled=True)):
        for bar in planned_bars(schedule, dispatcher.plan(schedule), max(now, start), end):
            lanes[bar.disk_id].bars.append(bar)
    happened = Run.objects.filter(team=team, started_at__lt=end).exclude(finished_at__lt=start)
    for run in happened.select_related("disk"):
        assert run.started_at is not None  # filtered on started_at
        finish = run.finished_at or max(now, run.started_at)
        lanes[run.disk_id].bars.append(Bar(run.started_at, finish, f"run {run.pk} {run.profile_name}: {run.state}",
                                           f"state-{run.state}", run.disk.host_id, run.disk_id))  # fmt: skip
    _flag_host_overlaps([bar for lane in lanes.values() for bar in lane.bars])
    for lane in lanes.values():
        lane.total = len(lane.bars)
        lane.bars = sorted(lane.bars, key=lambda b: b.start)[:cap]
    return list(lanes.values())


def overlaps(
    schedule: Schedule, planned: list[dispatcher.PlannedRun] | None = None, now: datetime | None = None
) -> list[Overlap]:
    """Every other enabled schedule of the team whose planned runs overlap this one's on a host in the next
    seven days, with the first moment; [] for a paused schedule. `planned` lets a draft (not saved) be checked."""
    if not schedule.enabled:
        return []
    if planned is None:
        planned = dispatcher.plan(_with_plans(Schedule.objects.filter(pk=schedule.pk)).get())
    hosts = {p.disk.host_id for p in planned}
    if not hosts:
        return []
    start = now or timezone.now()
    end = start + OVERLAP_HORIZON
    others = Schedule.objects.filter(team_id=schedule.team_id, enabled=True, targets__host_id__in=hosts)
    others = _with_plans(others.exclude(pk=schedule.pk).distinct())
    return _first_overlaps(
        planned_bars(schedule, planned, start, end),
        [(other, planned_bars(other, dispatcher.plan(other), start, end)) for other in others],
    )


def overlaps_by_schedule(team: Any, now: datetime | None = None) -> dict[int, list[Overlap]]:
    """overlaps() for every schedule of the team at once (the API's list): each schedule's bars are made once, and
    the queries do not grow with the number of schedules."""
    start = now or timezone.now()
    end = start + OVERLAP_HORIZON
    schedules = list(_with_plans(Schedule.objects.filter(team=team, enabled=True)))
    bars = [(schedule, planned_bars(schedule, dispatcher.plan(schedule), start, end)) for schedule in schedules]
    return {
        schedule.pk: _first_overlaps(mine, [(other, theirs) for other, theirs in bars if other.pk != schedule.pk])
        for schedule, mine in bars
    }


def _first_overlaps(mine: list[Bar], others: list[tuple[Schedule, list[Bar]]]) -> list[Overlap]:
    hosts = {bar.host_id for bar in mine}
    found = []
    for other, bars in others:
        first = _first_overlap(mine, [bar for bar in bars if bar.host_id in hosts])
        if first:
            at, my_bar, their_bar = first
            found.append(Overlap(other.pk, other.name, my_bar.host, at, my_bar.what, their_bar.what))
    return sorted(found, key=lambda o: (o.at, o.schedule_name))


def _first_overlap(mine: list[Bar], theirs: list[Bar]) -> tuple[datetime, Bar, Bar] | None:
    """The earliest moment a bar of `mine` and one of `theirs` on the same host both run, with the two bars.

    In order of start, a bar overlaps the other side when that side's bar ending last (on its host) has not
    ended yet; the first such bar found starts the earliest overlap."""
    sides = sorted([(bar, 0) for bar in mine] + [(bar, 1) for bar in theirs], key=lambda item: item[0].start)
    latest: dict[tuple[int, int], Bar] = {}  # (host, side) -> the bar ending last so far
    for bar, side in sides:
        other = latest.get((bar.host_id, 1 - side))
        if other and bar.start < other.end:
            return (bar.start, bar, other) if side == 0 else (bar.start, other, bar)
        known = latest.get((bar.host_id, side))
        if known is None or bar.end > known.end:
            latest[(bar.host_id, side)] = bar
    return None


def _flag_host_overlaps(all_bars: list[Bar]) -> None:
    by_host: dict[int, list[Bar]] = {}
    for bar in all_bars:
        by_host.setdefault(bar.host_id, []).append(bar)
    for host_bars in by_host.values():
        host_bars.sort(key=lambda b: b.start)
        latest: Bar | None = None
        for bar in host_bars:
            if latest and bar.start < latest.end:
                bar.overlaps = latest.overlaps = True
            if latest is None or bar.end > latest.end:
                latest = bar
