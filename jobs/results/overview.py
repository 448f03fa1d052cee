"""What the overview page shows (jobs/results/pages.py): every disk's latest result against its limit, 30-day
sparkline, running and failed runs. The Disks table's rows are kept between results (jobs/results/page_cache.py);
the runs running, waiting and failed are read afresh every view."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

from django.db.models import (
    Avg,
    BigIntegerField,
    ExpressionWrapper,
    F,
    FloatField,
    Max,
    Min,
    OuterRef,
    Q,
    Subquery,
)
from django.db.models.fields.json import KT
from django.db.models.functions import Cast
from django.template.loader import render_to_string

from jobs import limits, timeseries, units
from jobs.models import Disk, Host, Run, RunResult, Team
from jobs.results import page_cache

SPARK_DAYS = 30


RECENT_FAILURES = timedelta(days=7)


# Running now lists this many pending runs, and counts the rest.
WAITING_SHOWN = 10
# ... and this many running ones, the longest running first (each row follows its run's progress in the browser:
# a fleet's hundreds would each poll), and counts the rest, linking to the runs list.
ACTIVE_SHOWN = 20
# The Disks table shows this many disks a page (by host, then label): the page's queries and its size stay bounded
# however large the team (issue 34: 1,000 disks).
DISKS_PER_PAGE = 100


@dataclass
class Sparkline:
    line: str
    band: str
    dots: list[tuple[float, float]]
    limit_y: float | None
    label: str


SPARK_W, SPARK_H, SPARK_PAD = 120.0, 32.0, 2.0


EPOCH = date(1970, 1, 1)


def _sparkline(days: list[Mapping[str, Any]], limit: float | None, start: datetime) -> Sparkline | None:
    if not days:
        return None
    top = max([d["high"] for d in days] + [limit or 0]) * 1.05 or 1.0
    first_day = start.astimezone(UTC).date()

    def x(day: Any) -> float:
        return round(SPARK_PAD + (SPARK_W - 2 * SPARK_PAD) * (day - first_day).days / SPARK_DAYS, 1)

    def y(value: float) -> float:
        return round(SPARK_H - SPARK_PAD - (SPARK_H - 2 * SPARK_PAD) * value / top, 1)

    line = " ".join(f"{x(d['day'])},{y(d['mean'])}" for d in days)
    band = " ".join(
        [f"{x(d['day'])},{y(d['high'])}" for d in days] + [f"{x(d['day'])},{y(d['low'])}" for d in reversed(days)]
    )
    low, high = min(d["low"] for d in days), max(d["high"] for d in days)
    label = f"{len(days)} days with results; from {units.format_iops(low)} to {units.format_iops(high)}"
    if limit:
        label += f"; theoretical {units.format_iops_exact(limit)}"
    dots = [(x(d["day"]), y(d["mean"])) for d in days] if len(days) < 3 else []
    return Sparkline(line, band, dots, y(limit) if limit else None, label)


@dataclass
class DiskRow:
    disk: Disk
    last: Mapping[str, Any] | None
    spark: Sparkline | None

    @property
    def efficiency(self) -> limits.Efficiency | None:
        return (
            limits.Efficiency.of(self.last["iops"], self.last["theoretical"], self.last["burst"]) if self.last else None
        )

    @property
    def snapshot(self) -> Mapping[str, Any] | None:
        return self.last.get("snapshot") if self.last else None

    @property
    def bandwidth(self) -> str:
        """The last result's bandwidth, also in the unit its throughput limit is published in."""
        if not self.last or self.last.get("bw") is None:
            return ""
        bw = self.last["bw"]
        return limits.beside(units.format_bytes_per_s(bw), bw, limits.limit_unit(self.snapshot))

    @property
    def throughput_efficiency(self) -> limits.Efficiency | None:
        return limits.throughput_efficiency(self.last.get("bw"), self.snapshot) if self.last else None

    @property
    def throughput_efficiency_text(self) -> str:
        found = self.throughput_efficiency
        return limits.throughput_efficiency_text(found, self.snapshot) if found else ""


def _as_float(path: str) -> Cast:
    return Cast(KT(path), FloatField())


@dataclass(frozen=True)
class DiskPage:
    """Which page of the Disks table is shown: its number (from 1), how many pages, how many disks in all."""

    number: int
    count: int
    disks: int

    @property
    def first(self) -> int:
        return (self.number - 1) * DISKS_PER_PAGE + 1

    @property
    def last(self) -> int:
        return min(self.disks, self.number * DISKS_PER_PAGE)


def disk_page(team: Team, asked: str | None) -> DiskPage:
    """The page asked for (?page=), held within the pages there are; the first when none, or not a number."""
    disks = Disk.objects.filter(team=team).count()
    count = max(1, -(-disks // DISKS_PER_PAGE))
    number = int(asked) if asked and asked.isascii() and asked.isdigit() else 1
    return DiskPage(min(max(number, 1), count), count, disks)


def _page_disks(team: Team, page: DiskPage) -> list[Disk]:
    """The page's disks, each with its host and the id of its last result's run (last_run_id)."""
    newest = RunResult.objects.filter(disk=OuterRef("pk")).order_by("-finished_at", "-run_id")
    return list(
        Disk.objects.filter(team=team)
        .order_by("host__name", "label", "pk")
        .select_related("host")
        .annotate(last_run_id=Subquery(newest.values("run_id")[:1]))[page.first - 1 : page.last]
    )


def _disk_rows(disks: list[Disk], start: datetime) -> list[DiskRow]:
    """A constant number of queries however many disks (_page_disks): the last result of each, then their daily
    figures. Both read the narrow per-run results (RunResult), not the runs' JSON summaries."""
    last: dict[int, dict[str, Any]] = {
        row["disk_id"]: dict(row)
        for row in RunResult.objects.filter(run_id__in=[d.last_run_id for d in disks if d.last_run_id]).values(  # type: ignore[attr-defined]
            "disk_id",
            "profile_name",
            "finished_at",
            pk=F("run_id"),
            iops=F("total_iops"),
            theoretical=F("limit_iops"),
            burst=F("burst_iops"),
            bw=F("bw_bytes_per_s"),
        )
    }
    # The limits each last run was made against, for its throughput beside them (one query for every disk).
    by_run = {row["pk"]: row for row in last.values()}
    if by_run:
        for pk, snapshot in Run.objects.filter(pk__in=by_run).values_list("pk", "limits_snapshot"):
            by_run[pk]["snapshot"] = snapshot
    # UTC days by integer division of the stored epoch milliseconds: a date cast per row is a Python function
    # call in SQLite, and was most of this page's time with 200 disks.
    epoch_day = ExpressionWrapper(F("finished_ms") / timeseries.DAY_MS, output_field=BigIntegerField())
    daily = [
        row | {"day": EPOCH + timedelta(days=row["day"])}
        for row in RunResult.objects.filter(disk__in=[disk.pk for disk in disks], finished_at__gte=start)
        .values("disk_id", "profile_name", day=epoch_day)
        .annotate(mean=Avg("total_iops"), low=Min("total_iops"), high=Max("total_iops"))
        .order_by("day")
    ]
    series: dict[tuple[int, str], list[Mapping[str, Any]]] = {}
    for row in daily:
        if row["mean"] is not None:
            series.setdefault((row["disk_id"], row["profile_name"]), []).append(row)
    rows = []
    for disk in disks:
        result = last.get(disk.pk)
        days = series.get((disk.pk, result["profile_name"]), []) if result else []
        rows.append(DiskRow(disk, result, _sparkline(days, result["theoretical"] if result else None, start)))
    return rows


def _rows_html(team: Team, page: DiskPage, now: datetime) -> str:
    """The Disks table's rows, kept between results (jobs/results/page_cache.py)."""
    disks = _page_disks(team, page)
    start = now - timedelta(days=SPARK_DAYS)
    # The results the rows are drawn from: each disk's last one (its id is in the stamp through last_run_id) and
    # the sparklines' SPARK_DAYS, not ten years of them.
    # Each side of the OR on an index of its own (the disk and finish time; the run), so that PostgreSQL reads the
    # two and not every result of the page's disks: with the disks outside the OR it read ten years of them.
    drawn = RunResult.objects.filter(
        Q(disk__in=disks, finished_at__gte=start) | Q(run_id__in=[d.last_run_id for d in disks if d.last_run_id])  # type: ignore[attr-defined]
    )
    last_ids = tuple(d.last_run_id for d in disks)  # type: ignore[attr-defined]
    stamp = (team.pk, page, page_cache.disks_stamp(disks), last_ids, page_cache.results_stamp(drawn))

    def draw() -> str:
        rows = _disk_rows(disks, start)
        return render_to_string("jobs/results/_overview_rows.html", {"rows": rows, "spark_days": SPARK_DAYS})

    return page_cache.kept("overview-disks", stamp, draw, now)


def facts(team: Team, now: datetime, page: str | None = None) -> dict[str, Any]:
    """What the overview page shows of the team at `now`: a page of its disks' rows (`page`, ?page=), the runs
    running (the first ACTIVE_SHOWN) and waiting (WAITING_SHOWN), the recent failures."""
    runs = Run.objects.filter(team=team).select_related("disk__host").defer(*Run.BULKY_FIELDS, "summary")
    running = runs.filter(state__in=Run.ACTIVE_STATES)
    active = list(running.order_by(F("started_at").asc(nulls_last=True), "pk")[:ACTIVE_SHOWN])
    for run in active:
        # Elapsed and left as of now: an unwatched run's figures are read every half minute (jobs/runs/watching.py).
        run.progress = run.live_progress()
        expected = run.progress.get("expected_s")
        # An attribute for the template only, not a field of Run.
        run.percent = min(100.0, 100 * run.progress.get("elapsed_s", 0) / expected) if expected else None  # type: ignore[attr-defined]
    pending = runs.filter(state=Run.State.PENDING)
    # Due longest first, then those waiting for their stagger slot, by their slot; ordering by created_at made
    # SQLite walk the team's whole history by that index.
    waiting = list(pending.order_by(F("not_before").asc(nulls_first=True), "pk")[:WAITING_SHOWN])
    for run in active + waiting:
        # A scheduled run waits for its slot pending, and then, claimed a little early, on its host.
        run.waiting_until = run.not_before if run.not_before and run.not_before > now else None  # type: ignore[attr-defined]
    disks = disk_page(team, page)
    return {
        "rows_html": _rows_html(team, disks, now),
        "disk_page": disks,
        "active_more": running.count() - len(active) if len(active) == ACTIVE_SHOWN else 0,
        "host_count": Host.objects.filter(team=team).count(),
        "first_host": Host.objects.filter(team=team).first(),
        "active": active,
        "waiting": waiting,
        "waiting_more": pending.count() - len(waiting) if len(waiting) == WAITING_SHOWN else 0,
        "failed": runs.filter(
            state__in=(Run.State.FAILED, Run.State.ERROR, Run.State.LOST), finished_at__gte=now - RECENT_FAILURES
        ).order_by("-finished_at")[:10],
        "spark_days": SPARK_DAYS,
    }
