"""What a disk's compliance report holds beyond the Compliance card's figures (jobs/results/compliance.py): each
run of the period against its promise, drawn and listed, and the environment the runs were measured in.

The report is what a user sends to the vendor, so every figure in it can be traced: the runs table gives each
run's id, finish and limit, and the CSV export (jobs/exports/tables.py) has every run with every column.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from typing import Any

from django.db.models import F, FloatField, Q
from django.db.models.functions import Cast

from jobs import environment, limits, timeseries
from jobs.analysis import verdicts
from jobs.exports import drawing
from jobs.models import Disk, Run
from jobs.results import compliance

# The runs table lists at most this many (the misses first asked for, else every run); the CSV has them all.
LISTED_RUNS = 500
# The chart draws at most this many runs: min/max buckets keep every bucket's lowest and highest share.
DRAWN_RUNS = 1000


@dataclass(frozen=True)
class RunLine:
    run_id: int
    finished_at: datetime
    profile: str
    measured_iops: float
    limit_iops: float
    share: float
    miss: bool
    steady: bool | None
    warnings: int
    verdicts: list[str] | None  # labels of the run's verdicts against its number; None: not judged (verdicts.md)


def _shares(disk: Disk, query: compliance.Query) -> Any:
    """The period's promised results with each run's share of its promise, in time order."""
    promised = query.results(disk).filter(limit_iops__gt=0, total_iops__isnull=False)
    return promised.annotate(share=F("total_iops") / Cast("limit_iops", FloatField())).order_by("finished_at", "run_id")


def chart(disk: Disk, query: compliance.Query, zone: tzinfo = UTC) -> drawing.OverTime | None:
    """The over-time chart, its time axis in the zone (the reader's)."""
    points = list(_shares(disk, query).values_list("finished_ms", "share"))
    return drawing.over_time(timeseries.minmax(points, DRAWN_RUNS), query.threshold, zone)


def run_lines(disk: Disk, query: compliance.Query, *, misses_only: bool) -> tuple[list[RunLine], int]:
    """The newest LISTED_RUNS runs of the period (only the misses, when asked) in time order, and how many there
    are in all."""
    found = _shares(disk, query)
    if misses_only:
        found = found.filter(Q(total_iops__lt=F("limit_iops") * query.threshold))
    count = found.count()
    rows = found.order_by("-finished_at", "-run_id").values_list(
        "run_id",
        "finished_at",
        "profile_name",
        "total_iops",
        "limit_iops",
        "share",
        "steady",
        "warning_count",
        "measured_disk",
        "verdict_kinds",
    )[:LISTED_RUNS]
    lines = [
        RunLine(run, at, profile, iops, limit, share, share < query.threshold, steady, warnings, _labels(judged, kinds))
        for run, at, profile, iops, limit, share, steady, warnings, judged, kinds in rows
    ]
    return lines[::-1], count


def _labels(judged: bool | None, kinds: str) -> list[str] | None:
    """A run's verdicts by label; None for a run not judged."""
    return None if judged is None else [verdicts.label(kind) for kind in kinds.split(",") if kind]


def measured_in(disk: Disk, query: compliance.Query) -> dict[str, Any] | None:
    """The environment of the period's newest run that recorded one: {run, finished_at, facts}."""
    runs = Run.objects.filter(disk=disk, environment__isnull=False, state=Run.State.SUCCEEDED)
    if query.since is not None:
        runs = runs.filter(finished_at__gte=query.since)
    if query.until is not None:
        runs = runs.filter(finished_at__lt=query.until)
    newest = runs.order_by("-finished_at").values_list("pk", "finished_at", "environment").first()
    if newest is None:
        return None
    run_id, finished, env = newest
    return {"run": run_id, "finished_at": finished, "facts": environment.facts(env)}


def period(found: dict[str, Any], now: datetime) -> tuple[datetime | None, datetime]:
    """The period's start (None: all time, from the first run) and end (now when open)."""
    since = datetime.fromisoformat(found["since"]) if found["since"] else None
    if since is None and found["first_run_at"]:
        since = datetime.fromisoformat(found["first_run_at"])
    until = datetime.fromisoformat(found["until"]) if found["until"] else now
    return since, until.astimezone(UTC)


def limit_source(snapshot: dict[str, Any] | None) -> dict[str, Any] | None:
    """Where a run's promise came from: the catalog record, its source's address and date and whether it was
    checked against the source, or typed by hand; None for a run made without limits."""
    if not snapshot or snapshot.get("error") or limits.promised_iops(snapshot) is None:
        return None
    source = snapshot.get("source") or {}
    return {
        "iops": limits.promised_iops(snapshot),
        "block_size_bytes": snapshot.get("block_size_bytes"),
        "record_id": snapshot.get("record_id") or "",
        "source_url": source.get("url") or "",
        "source_date": source.get("date") or "",
        "verified": bool(source.get("verified")),
    }
