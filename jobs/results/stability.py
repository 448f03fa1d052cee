"""Stability and noisy neighbours, from the stored results (the maths is jobs/analysis/stability.py): a run's
stability (its page and the API's run detail), a disk's hour-of-week heatmap, and the drops it shared with disks
on other hosts of its site (the disk page and GET /api/v1/disks/{id}/stability/). The heatmap's hours are the
reader's zone's on the page and UTC in the API, and say which.

The heatmap and the shared drops read the period's result rows (three or four columns each), bounded by the
period the caller picked (compliance.parse: 30 days unless asked).
"""

from __future__ import annotations

import statistics
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

from jobs.analysis import stability
from jobs.models import Disk, Run, RunSample
from jobs.results.compliance import Query


def run_stability(run: Run) -> dict[str, Any] | None:
    """A succeeded run's stability: the CV of its per-second IOPS, the share of its seconds below 80 % of their
    median, and p99/p50 of each direction's completion latency; None for a run with no summary."""
    if not isinstance(run.summary, dict):
        return None
    rows = RunSample.of_run(run).values_list("read_iops", "write_iops")
    levels = [(read or 0.0) + (write or 0.0) for read, write in rows if read is not None or write is not None]
    cv = stability.coefficient_of_variation(levels)
    below = stability.share_below_median(levels)
    return {
        "seconds": len(levels),
        "cv": None if cv is None else round(cv, 4),
        "below_median_share": None if below is None else round(below, 4),
        "dip_percent": round(100 * stability.DIP_FRACTION),
        "read_p99_p50": _tail(run.summary, "read"),
        "write_p99_p50": _tail(run.summary, "write"),
    }


def _tail(summary: dict[str, Any], direction: str) -> float | None:
    clat = (summary.get(direction) or {}).get("clat_us") or {}
    ratio = stability.tail_ratio(_number(clat.get("p99")), _number(clat.get("p50")))
    return None if ratio is None else round(ratio, 2)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def heatmap(disk: Disk, query: Query, zone: ZoneInfo | None = None) -> dict[str, Any]:
    """The disk's runs of the period by hour of the week on the zone's wall clock (the reader's on the disk page,
    UTC in the API and when none), each run placed by its own finish, so daylight saving and half-hour zones land
    exactly: per cell the runs, the median IOPS and the median
    p99 latency (the worse of read and write), and a level 0-4 of each for colour, from how the cell's runs did
    against their own profile's median (0: as usual or better; 4: half the IOPS or less, twice the latency or
    more)."""
    rows = query.results(disk).values_list("finished_ms", "total_iops", "read_p99_us", "write_p99_us", "profile_name")
    points = [(ms / 1000, iops, _worse(read, write), name) for ms, iops, read, write, name in rows.iterator(2000)]
    days = []
    for day, cells in zip(stability.WEEK_DAYS, stability.week_grid(points, zone), strict=True):
        for cell in cells:
            cell["iops_level"] = _level(cell.pop("iops_ratio"))
            ratio = cell.pop("p99_ratio")
            cell["p99_level"] = _level(1 / ratio if ratio else None)
        days.append({"day": day, "hours": cells})
    overall = {
        "median_iops": _median([p[1] for p in points if p[1] is not None]),
        "median_p99_us": _median([p[2] for p in points if p[2] is not None]),
    }
    name = zone.key if zone is not None else "UTC"
    return {**query.as_dict(), "zone": name, "runs": len(points), **overall, "days": days}


def _worse(read: float | None, write: float | None) -> float | None:
    present = [value for value in (read, write) if value is not None]
    return max(present) if present else None


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _level(ratio: float | None) -> int | None:
    """0 (as usual or better: 95 % of the profile's median or more) to 4 (half or less)."""
    if ratio is None:
        return None
    return next((level for level, floor in enumerate((0.95, 0.8, 0.65, 0.5)) if ratio >= floor), 4)


def shared_drops(disk: Disk, query: Query) -> dict[str, Any]:
    """The disk's drops of the period that disks on other hosts of its site shared in time. Each disk's runs
    are held against the median of that disk x profile over the same period (jobs.analysis.stability)."""
    site = disk.host.site
    base = {**query.as_dict(), "zone": "UTC", "site": site, "dip_percent": round(100 * stability.DIP_FRACTION)}
    if not site:
        why = (
            "The host has no site: set one on the host's form to compare it with its neighbours (a site also routes "
            "the host's runs to that site's workers; the form says which serve it)."
        )
        return base | {"why": why, "groups": []}
    disks = Disk.objects.filter(team_id=disk.team_id, host__site=site)
    rows = query.results_on(disks).values_list(
        "run_id", "disk_id", "disk__host_id", "profile_name", "run__started_at", "finished_ms", "total_iops"
    )
    runs = [
        (run, disk_id, host, profile, started.timestamp() if started else ms / 1000, ms / 1000, iops)
        for run, disk_id, host, profile, started, ms, iops in rows
        if iops is not None
    ]
    groups = [g for g in stability.shared(stability.drops(runs)) if any(d.disk_id == disk.pk for d in g)]
    labels = dict(disks.values_list("pk", "label"))
    hosts = dict(disks.values_list("host_id", "host__name"))
    return base | {"why": None, "groups": [_group(group, labels, hosts) for group in groups]}


def _group(group: list[stability.Drop], labels: dict[int, str], hosts: dict[int, str]) -> dict[str, Any]:
    return {
        "from": _iso(group[0].start_s),
        "to": _iso(max(d.end_s for d in group)),
        "hosts": len({d.host_id for d in group}),
        "drops": [
            {
                "run": d.run_id,
                "disk": d.disk_id,
                "disk_label": labels.get(d.disk_id, ""),
                "host": d.host_id,
                "host_name": hosts.get(d.host_id, ""),
                "started_at": _iso(d.start_s),
                "finished_at": _iso(d.end_s),
                "iops": d.iops,
                "median_iops": d.median_iops,
                "percent_of_median": round(100 * d.iops / d.median_iops, 1) if d.median_iops else None,
            }
            for d in group
        ],
    }


def _iso(epoch_s: float) -> str:
    return datetime.fromtimestamp(epoch_s, UTC).isoformat().replace("+00:00", "Z")
