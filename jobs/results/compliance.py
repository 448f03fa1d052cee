"""Is the disk getting what it was promised, and how often not: a disk's runs over a period held against the
limit each run was measured under (GET /api/v1/disks/{id}/compliance/ and the disk page's Compliance card).

The promise is a run's baseline IOPS at its block size (RunResult.limit_iops, from the run's limits snapshot). A
run served from burst credits is held against the baseline too: the baseline is what the provider promises all
the time (AWS: gp2 delivers its baseline 99 % of the time), burst is a bonus above it, so a run is a miss when it
measured below the baseline less the tolerance (5 % by default), whether credits were left or not.

Nothing loads every run: the counts, the profiles and the worst hour come from one scan of the result rows
grouped by profile and UTC hour, the longest streak from one window query in index order, and the per-second
share from the RunSample rows of the period's newest SAMPLED_RUNS promised runs only (the answer says how many
runs it covered). bench/compliance.py measures it on a disk with 100,000 runs. Runs whose snapshot and disk had
no IOPS limit are counted apart ("no promise").
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db import connection
from django.db.models import Case, Count, F, FloatField, Max, Min, Q, QuerySet, Sum, Value, When
from django.db.models.functions import Cast, Coalesce
from django.utils import timezone

from jobs.models import Disk, Run, RunResult, RunSample

PERIODS = {"7d": timedelta(days=7), "30d": timedelta(days=30), "90d": timedelta(days=90), "all": None}
DEFAULT_PERIOD = "30d"
DEFAULT_TOLERANCE = 5.0
SAMPLED_RUNS = 1_000
_ISO = re.compile(r"\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?")


class BadRequest(ValueError):
    """A query parameter that cannot be used: `parameter` names it, the message says how to fix it."""

    def __init__(self, parameter: str, message: str) -> None:
        super().__init__(message)
        self.parameter = parameter


@dataclass(frozen=True)
class Query:
    """What was asked: the period (its name, or 'custom' for since/until), a profile, and the tolerance."""

    period: str
    since: datetime | None
    until: datetime | None
    profile: str
    tolerance: float

    @property
    def threshold(self) -> float:
        """The share of the promise a run must reach."""
        return 1 - self.tolerance / 100

    def results(self, disk: Disk) -> QuerySet[RunResult]:
        return self._narrow(RunResult.objects.filter(disk=disk))

    def results_on(self, disks: QuerySet[Disk]) -> QuerySet[RunResult]:
        return self._narrow(RunResult.objects.filter(disk__in=disks))

    def _narrow(self, found: QuerySet[RunResult]) -> QuerySet[RunResult]:
        """The rows of the period and profile."""
        if self.since is not None:
            found = found.filter(finished_at__gte=self.since)
        if self.until is not None:
            found = found.filter(finished_at__lt=self.until)
        if self.profile:
            value = self.profile
            found = found.filter(profile_id=int(value)) if _whole(value) else found.filter(profile_name=value)
        return found

    def as_dict(self) -> dict[str, Any]:
        return {
            "period": self.period,
            "since": _iso(self.since),
            "until": _iso(self.until),
            "profile": self.profile,
            "tolerance_percent": self.tolerance,
            "threshold_percent": round(100 * self.threshold, 2),
        }


def parse(params: Mapping[str, str], now: datetime | None = None) -> Query:
    """The query of `params` (period: 7d, 30d, 90d or all, or since/until as ISO dates or times; profile: an id
    or a name; tolerance: percent below the promise still counted as kept, 0-99, default 5). BadRequest names
    the parameter."""
    now = now or timezone.now()
    since, until = _moment(params, "since"), _moment(params, "until", end_of_day=True)
    period = params.get("period", "").strip()
    if since or until:
        if period:
            raise BadRequest("period", "Give either period or since/until, not both.")
        if since and until and until <= since:
            raise BadRequest("until", "until is not after since; swap them.")
        period = "custom"
    else:
        period = period or DEFAULT_PERIOD
        if period not in PERIODS:
            raise BadRequest("period", f"Unknown period {period!r}; use 7d, 30d, 90d, all, or since/until.")
        span = PERIODS[period]
        since = now - span if span else None
    return Query(period, since, until, params.get("profile", "").strip(), _tolerance(params.get("tolerance")))


def _tolerance(text: str | None) -> float:
    if text is None or not text.strip():
        return DEFAULT_TOLERANCE
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 99:
        raise BadRequest("tolerance", "tolerance is a percent from 0 to 99 (5 counts runs below 95 % as misses).")
    return value


def _moment(params: Mapping[str, str], name: str, end_of_day: bool = False) -> datetime | None:
    text = params.get(name, "").strip()
    if not text:
        return None
    if not _ISO.fullmatch(text):
        raise BadRequest(name, f"Give {name} as an ISO date or date-time, e.g. 2026-05-01 or 2026-05-01T08:00Z.")
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise BadRequest(name, f"{name} {text!r} is not a real date or time; check the day and the hour.") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    # A bare date as `until` includes that day.
    return moment + timedelta(days=1) if end_of_day and len(text) == 10 else moment


def _whole(text: str) -> bool:
    return text.isascii() and text.isdigit() and len(text) <= 18


def _iso(moment: datetime | None) -> str | None:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z") if moment else None


# ----------------------------------------------------------------------------- the answer


def disk_compliance(disk: Disk, query: Query) -> dict[str, Any]:
    """The disk's compliance over the query's period (see the module's docstring)."""
    results = query.results(disk)
    promised = results.filter(PROMISED)
    groups = _groups(results, query.threshold)
    runs, below = sum(g["runs"] for g in groups), sum(g["below"] for g in groups)
    efficiency = sum(g["efficiency_sum"] or 0.0 for g in groups)
    first = min((g["first"] for g in groups), default=None)
    last = max((g["last"] for g in groups), default=None)
    return {
        **query.as_dict(),
        "runs": runs,
        "below": below,
        "below_share": below / runs if runs else None,
        "no_promise": sum(g["no_promise"] for g in groups),
        "mean_efficiency": efficiency / runs if runs else None,
        "first_run_at": _iso(first),
        "last_run_at": _iso(last),
        "seconds": _seconds(promised, query.threshold),
        "worst_hour": _worst_hour(groups),
        "longest_streak": _longest_streak(promised, query.threshold),
        "limit": _limit(promised, changed=any(g["limit_min"] != g["limit_max"] for g in groups if g["runs"])),
        "by_profile": _by_profile(groups),
        "judged_against": "baseline",
    }


# A result held against a promise: it has an IOPS limit and a measured total.
PROMISED = Q(limit_iops__gt=0, total_iops__isnull=False)


def missed(threshold: float) -> Q:
    """A promised result below the promise less the tolerance (threshold: the share it must reach)."""
    return PROMISED & Q(total_iops__lt=F("limit_iops") * threshold)


def by_series(query: Query, disks: QuerySet[Disk]) -> list[dict[str, Any]]:
    """For every disk of `disks` and profile (by name) with results in the query's period: its promised runs and
    how many were below (`disk_id`, `profile_name`, `runs`, `below`), in one grouped scan of the result rows,
    whatever the number of disks. The Prometheus scrape's compliance series (jobs/metrics/scrape.py)."""
    rows = (
        query.results_on(disks)
        .values("disk_id", "profile_name")
        .annotate(runs=Count("pk", filter=PROMISED), below=Count("pk", filter=missed(query.threshold)))
        .order_by()
    )
    return [dict(row) for row in rows]


def _groups(results: QuerySet[RunResult], threshold: float) -> list[dict[str, Any]]:
    """One scan of the period's rows, grouped by profile and UTC hour of the finish (the hour from the epoch
    milliseconds: integer arithmetic in SQL, the same on SQLite and PostgreSQL). The answer's totals, its profiles
    and its worst hour are sums of these few rows."""
    promise = PROMISED
    rows = (
        results.annotate(hour=F("finished_ms") / 3_600_000 % 24)
        .values("profile_name", "hour")
        .annotate(
            runs=Count("pk", filter=promise),
            below=Count("pk", filter=missed(threshold)),
            no_promise=Count("pk", filter=Q(limit_iops__isnull=True) | Q(limit_iops__lte=0)),
            efficiency_sum=Sum(F("total_iops") / Cast("limit_iops", FloatField()), filter=promise),
            limit_min=Min("limit_iops", filter=promise),
            limit_max=Max("limit_iops", filter=promise),
            first=Min("finished_at"),
            last=Max("finished_at"),
        )
        .order_by()
    )
    return [dict(row) for row in rows]


def _seconds(promised: QuerySet[RunResult], threshold: float) -> dict[str, Any]:
    """The per-second samples of the period's newest SAMPLED_RUNS promised runs below the threshold.

    The runs are grouped by their limit (a period holds one or a few), so the samples are read in one scan with
    each group's floor as a number: no join from every sample back to its run's result."""
    newest = promised.order_by("-finished_at", "-run_id").values_list("run_id", "limit_iops")[:SAMPLED_RUNS]
    by_limit: dict[float, list[int]] = {}
    for run_id, limit in newest:
        if limit is not None:  # promised: never None
            by_limit.setdefault(limit, []).append(run_id)
    read = sum(len(ids) for ids in by_limit.values())
    if not read:
        return {"seconds": 0, "below": 0, "below_share": None, "runs": 0, "newest_runs_read": 0}
    level = Coalesce("read_iops", Value(0.0)) + Coalesce("write_iops", Value(0.0))
    below = Q()
    for limit, ids in by_limit.items():
        below |= Q(run_id__in=ids, level__lt=limit * threshold)
    samples = RunSample.objects.filter(run_id__in=[i for ids in by_limit.values() for i in ids]).filter(
        Q(read_iops__isnull=False) | Q(write_iops__isnull=False)
    )
    counted = samples.annotate(level=level).aggregate(
        seconds=Count("pk"), below=Count("pk", filter=below), runs=Count("run_id", distinct=True)
    )
    seconds, below_count = counted["seconds"], counted["below"]
    return {
        "seconds": seconds,
        "below": below_count,
        "below_share": below_count / seconds if seconds else None,
        "runs": counted["runs"],
        "newest_runs_read": read,
    }


def _worst_hour(groups: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The hour of the day (UTC, by each run's finish) whose runs had the lowest mean efficiency."""
    hours: dict[int, list[float]] = {}
    for group in groups:
        if group["runs"]:
            summed = hours.setdefault(group["hour"], [0.0, 0])
            summed[0] += group["efficiency_sum"]
            summed[1] += group["runs"]
    if not hours:
        return None
    hour, (total, runs) = min(hours.items(), key=lambda item: (item[1][0] / item[1][1], item[0]))
    return {"hour": hour, "zone": "UTC", "mean_efficiency": total / runs, "runs": int(runs)}


def _longest_streak(promised: QuerySet[RunResult], threshold: float) -> dict[str, Any]:
    """The longest run of consecutive misses in time order (gaps and islands in SQL: never every row in Python),
    the latest of equal lengths."""
    flagged = promised.annotate(
        t=F("finished_ms"),
        f=F("finished_at"),
        r=F("run_id"),
        miss=Case(When(total_iops__lt=F("limit_iops") * threshold, then=Value(1)), default=Value(0)),
    ).values_list("t", "f", "r", "miss")
    inner, params = flagged.query.sql_with_params()
    # Each miss's island is the number of kept runs before it: one running sum, in the order of the (disk,
    # finished_at) index, which holds the run id too.
    sql = f"""
        SELECT COUNT(*) AS n, MIN(t), MAX(t) FROM (
            SELECT t, miss, SUM(1 - miss) OVER (ORDER BY f, r ROWS UNBOUNDED PRECEDING) AS island
            FROM ({inner}) AS flagged
        ) AS islands WHERE miss = 1 GROUP BY island ORDER BY n DESC, MAX(t) DESC LIMIT 1
    """  # noqa: S608  (the inner query is Django's, its values are parameters)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if row is None:
        return {"runs": 0, "from": None, "to": None}
    n, first_ms, last_ms = row
    return {"runs": n, "from": _iso_ms(first_ms), "to": _iso_ms(last_ms)}


def _iso_ms(ms: int) -> str | None:
    return _iso(datetime.fromtimestamp(ms / 1000, UTC))


def _limit(promised: QuerySet[RunResult], *, changed: bool) -> dict[str, Any] | None:
    """The promise of the period's newest promised run and where it came from (its limits snapshot); `changed`
    says a profile's runs had different limits within the period (a resize, a new catalog record)."""
    newest = promised.order_by("-finished_at", "-run_id").values_list("run_id", "limit_iops", "block_size_bytes")
    row = newest.first()
    if row is None:
        return None
    run_id, iops, block_size = row
    snapshot = Run.objects.filter(pk=run_id).values_list("limits_snapshot", flat=True).first() or {}
    source = snapshot.get("source") or {}
    return {
        "iops": iops,
        "block_size_bytes": block_size,
        "record_id": snapshot.get("record_id") or "",
        "disk_type": snapshot.get("disk_type") or "",
        "source_url": source.get("url") or "",
        "source_date": source.get("date") or "",
        "verified": bool(source.get("verified")),
        "effective_from": snapshot.get("effective_from"),
        "from_run": run_id,
        "changed": changed,
    }


def _by_profile(groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    profiles: dict[str, dict[str, int]] = {}
    for group in groups:
        summed = profiles.setdefault(group["profile_name"], {"runs": 0, "below": 0, "no_promise": 0})
        for key in summed:
            summed[key] += group[key]
    return [
        {
            "profile": name or "(no profile)",
            **counts,
            "below_share": counts["below"] / counts["runs"] if counts["runs"] else None,
        }
        for name, counts in sorted(profiles.items())
    ]
