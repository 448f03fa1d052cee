"""Is the disk getting what it was promised, and how often not: a disk's runs over a period held against the
limit each run was measured under (GET /api/v1/disks/{id}/compliance/ and the disk page's Compliance card).

The promise is a run's baseline IOPS at its block size (RunResult.limit_iops, from the run's limits snapshot). A
run served from burst credits is held against the baseline too: the baseline is what the provider promises all
the time (AWS: gp2 delivers its baseline 99 % of the time), burst is a bonus above it, so a run is a miss when it
measured below the baseline less the tolerance (5 % by default), whether credits were left or not.

Nothing loads every run. What no tolerance changes (the runs with and without a promise, their efficiency, limits,
first and last finish, and per UTC hour of the finish the runs and their efficiency) is summed by the database from
the day rollup (RunResultDay, a row a profile and day, kept as each result is recorded) for the whole days of the
period, and from the results themselves for the part days at its ends. The misses depend on the tolerance asked,
so they come from one scan of the period's promised runs in time order that returns one small integer a run (its
profile and whether it missed): the counts of each profile and the longest streak are read off those. The
per-second share comes from the RunSample rows of the period's newest SAMPLED_RUNS promised runs only (the answer
says how many runs it covered). bench/compliance.py measures it on a disk with 100,000 runs. Runs whose snapshot and
disk had no IOPS limit are counted apart ("no promise").
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, tzinfo
from typing import Any, cast

from django.db import connection
from django.db.models import (
    BigIntegerField,
    Case,
    Count,
    ExpressionWrapper,
    F,
    FloatField,
    Max,
    Min,
    Q,
    QuerySet,
    Sum,
    Value,
    When,
)
from django.db.models.expressions import RawSQL
from django.db.models.functions import Cast
from django.utils import timezone

from jobs import clock, timeseries
from jobs.models import Disk, Run, RunResult, RunResultDay, RunSample, partitions

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
    # Leave out runs with a verdict against their number (docs/user-guide/verdicts.md): runs not judged stay.
    disk_only: bool = False

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
        if self.disk_only:
            found = found.exclude(measured_disk=False)
        return found.filter(**_profile_lookup(self.profile))

    def as_dict(self) -> dict[str, Any]:
        return {
            "period": self.period,
            "since": _iso(self.since),
            "until": _iso(self.until),
            "profile": self.profile,
            "tolerance_percent": self.tolerance,
            "threshold_percent": round(100 * self.threshold, 2),
            "measured": "disk" if self.disk_only else "all",
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
    measured = params.get("measured", "").strip() or "all"
    if measured not in ("all", "disk"):
        raise BadRequest("measured", "measured is 'disk' (leave out runs with a verdict on their number) or 'all'.")
    profile, tolerance = params.get("profile", "").strip(), _tolerance(params.get("tolerance"))
    return Query(period, since, until, profile, tolerance, disk_only=measured == "disk")


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
    tally = _tally(disk, query)
    misses = _misses(promised, query.threshold, sorted(tally.profiles))
    profiles = tally.profiles.values()
    runs = sum(p.runs for p in profiles)
    below = sum(misses.below.values())
    return {
        **query.as_dict(),
        "runs": runs,
        "below": below,
        "below_share": below / runs if runs else None,
        "no_promise": sum(p.no_promise for p in profiles),
        "mean_efficiency": sum(p.efficiency_sum for p in profiles) / runs if runs else None,
        "first_run_at": _iso_ms(min((p.first_ms for p in profiles if p.first_ms is not None), default=None)),
        "last_run_at": _iso_ms(max((p.last_ms for p in profiles if p.last_ms is not None), default=None)),
        "seconds": _seconds(promised, query.threshold),
        "worst_hour": _worst_hour(tally.hours),
        "longest_streak": misses.longest_streak(),
        "limit": _limit(promised, changed=any(p.limit_changed for p in profiles)),
        "by_profile": _by_profile(tally.profiles, misses.below),
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


# ----------------------------------------------------------------------------- what no tolerance changes


@dataclass
class ProfileTally:
    """One profile's runs in the period: with a promise, without one, the promised runs' efficiency sum and
    lowest and highest limit, the first and last finish (ms since the epoch)."""

    runs: int = 0
    no_promise: int = 0
    efficiency_sum: float = 0.0
    limit_min: float | None = None
    limit_max: float | None = None
    first_ms: int | None = None
    last_ms: int | None = None

    @property
    def limit_changed(self) -> bool:
        return self.runs > 0 and self.limit_min != self.limit_max

    def add(self, row: Mapping[str, Any]) -> None:
        """Add a day's or a group's counts (keys as _groups names them)."""
        self.runs += row["runs"]
        self.no_promise += row["no_promise"]
        self.efficiency_sum += row["efficiency_sum"] or 0.0
        self.limit_min = _least(self.limit_min, row["limit_min"])
        self.limit_max = _most(self.limit_max, row["limit_max"])
        self.first_ms = _least(self.first_ms, row["first"])
        self.last_ms = _most(self.last_ms, row["last"])


def _least(a: Any, b: Any) -> Any:
    return b if a is None else a if b is None else min(a, b)


def _most(a: Any, b: Any) -> Any:
    return b if a is None else a if b is None else max(a, b)


@dataclass
class Tally:
    """The period's runs by profile name, and by UTC hour of the finish the promised runs and their efficiency
    sum (over every profile asked)."""

    profiles: dict[str, ProfileTally]
    hours: dict[int, list[float]]

    def add(self, name: str, row: Mapping[str, Any], hours: list[list[Any]]) -> None:
        self.profiles.setdefault(name, ProfileTally()).add(row)
        for hour, runs, efficiency_sum in hours:
            summed = self.hours.setdefault(hour, [0, 0.0])
            summed[0] += runs
            summed[1] += efficiency_sum or 0.0


# What the day rollup's columns sum to over a period, by profile (named apart from the columns: Django refuses an
# aggregate named as a field).
DAY_SUMS = {
    "runs": Sum("promised"), "no_promise": Sum("no_promise"), "efficiency_sum": Sum("efficiency_sum"),
    "limit_min": Min("limit_min"), "limit_max": Max("limit_max"), "first": Min("first_ms"), "last": Max("last_ms"),
}  # fmt: skip
WHATS = ("runs", "efficiency")
HOUR_SUMS = {
    f"summed_{timeseries.hour_field(hour, what)}": Sum(timeseries.hour_field(hour, what))
    for hour in range(24)
    for what in WHATS
}


def _tally(disk: Disk, query: Query) -> Tally:
    """The whole UTC days inside the period from the disk's day rollup (RunResultDay: a row a profile and day),
    the part days at its ends from the results themselves: the sums one scan of every result would give."""
    tally = Tally({}, {})
    first_day, end_day = _whole_days(query)
    results = query.results(disk)
    if (first_day is not None and end_day is not None and first_day >= end_day) or query.disk_only:
        # The period lies within two days (its results are few), or runs with a verdict are left out, which the
        # day rollup counts with the others: the results themselves.
        edges = results
    else:
        days = RunResultDay.objects.filter(disk=disk, **_profile_lookup(query.profile))
        outside = Q()
        if first_day is not None:
            days = days.filter(day__gte=first_day)
            outside |= Q(finished_at__lt=timeseries.midnight(first_day))
        if end_day is not None:
            days = days.filter(day__lt=end_day)
            outside |= Q(finished_at__gte=timeseries.midnight(end_day))
        for name, counts, hours in _summed_days(days):
            tally.add(name, counts, hours)
        if not outside:
            return tally
        edges = results.filter(outside)
    for group in _groups(edges):
        tally.add(group["profile_name"], group, [[group["hour"], group["runs"], group["efficiency_sum"]]])
    return tally


def _summed_days(days: QuerySet[RunResultDay]) -> Iterator[tuple[str, dict[str, Any], list[list[Any]]]]:
    """The days' columns summed by the database, a profile at a time: its name, its counts (keys as _groups
    names them) and its [hour, runs, efficiency sum] for each UTC hour."""
    sums = {f"summed_{key}": summed for key, summed in DAY_SUMS.items()}
    rows = cast("Iterable[dict[str, Any]]", days.values("profile_name").annotate(**sums, **HOUR_SUMS).order_by())
    for row in rows:
        hours = [[hour, *(row[f"summed_{timeseries.hour_field(hour, what)}"] for what in WHATS)] for hour in range(24)]
        yield row["profile_name"], {key: row[f"summed_{key}"] for key in DAY_SUMS}, hours


def _whole_days(query: Query) -> tuple[int | None, int | None]:
    """The first UTC day wholly inside the period and the day after its last (None: unbounded)."""
    first = end = None
    if query.since is not None:
        first = -(-timeseries.epoch_ms(query.since) // timeseries.DAY_MS)
        if timeseries.midnight(first) < query.since:  # less than a millisecond past a midnight
            first += 1
    if query.until is not None:
        end = timeseries.utc_day(timeseries.epoch_ms(query.until))
    return first, end


def _profile_lookup(profile: str) -> dict[str, Any]:
    """The profile asked for (an id or a name; none: every one) as lookups that fit RunResult and RunResultDay."""
    if not profile:
        return {}
    return {"profile_id": int(profile)} if _whole(profile) else {"profile_name": profile}


def _groups(results: QuerySet[RunResult]) -> list[dict[str, Any]]:
    """Some results' counts grouped by profile and UTC hour of the finish (the hour from the epoch milliseconds:
    integer arithmetic in SQL, the same on SQLite and PostgreSQL)."""
    promise = PROMISED
    rows = (
        results.annotate(hour=F("finished_ms") / timeseries.HOUR_MS % 24)
        .values("profile_name", "hour")
        .annotate(
            runs=Count("pk", filter=promise),
            no_promise=Count("pk", filter=Q(limit_iops__isnull=True) | Q(limit_iops__lte=0)),
            efficiency_sum=Sum(F("total_iops") / Cast("limit_iops", FloatField()), filter=promise),
            limit_min=Min("limit_iops", filter=promise),
            limit_max=Max("limit_iops", filter=promise),
            first=Min("finished_ms"),
            last=Max("finished_ms"),
        )
        .order_by()
    )
    return [dict(row) for row in rows]


# ----------------------------------------------------------------------------- the misses


@dataclass
class Misses:
    """The promised runs below the threshold: how many of each profile, and the longest unbroken run of them in
    time order (its length, and the finish times of its first and last run in ms since the epoch)."""

    below: dict[str, int]
    streak: int
    streak_ms: tuple[int, int] | None

    def longest_streak(self) -> dict[str, Any]:
        first, last = self.streak_ms or (None, None)
        return {"runs": self.streak, "from": _iso_ms(first), "to": _iso_ms(last)}


def _misses(promised: QuerySet[RunResult], threshold: float, names: list[str]) -> Misses:
    """One scan of the period's promised runs in time order (the order of the (disk, finished_at) index), one
    integer a run: its finish (ms) times `step`, plus its profile's place in `names` times two, plus one for a
    miss (`step` is even, so a value is odd exactly when its run missed). How often each remainder comes gives
    every profile's misses, the odd and even values in order the longest streak and its times. Only integers
    cross from the database, and the tolerance can be any: that is why the misses are not in the day rollup."""
    step = 2 * (len(names) + 1)
    profile = Case(
        *(When(profile_name=name, then=Value(2 * i)) for i, name in enumerate(names)), default=Value(2 * len(names))
    )
    missed_one = Case(When(total_iops__lt=F("limit_iops") * threshold, then=Value(1)), default=Value(0))
    coded = promised.annotate(
        code=ExpressionWrapper(F("finished_ms") * step + profile + missed_one, output_field=BigIntegerField())
    )
    sql, params = coded.order_by("finished_at", _tie()).values_list("code").query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        values = [value for (value,) in cursor.fetchall()]
    counts = Counter(value % step for value in values)
    below = {name: counts[2 * i + 1] for i, name in enumerate(names)}
    # The streaks are the pieces between kept runs; the latest of the longest is the one told.
    lengths = [len(piece) for piece in bytes(value & 1 for value in values).split(b"\x00")]
    longest = max(lengths, default=0)
    if not longest:
        return Misses(below, 0, None)
    last = len(lengths) - 1 - lengths[::-1].index(longest)
    start = sum(lengths[:last]) + last  # each kept run before it takes one place
    return Misses(below, longest, (values[start] // step, values[start + longest - 1] // step))


def _tie() -> Any:
    """What orders results of one finish time: the run id. On SQLite the run id is the table's rowid, and only
    under that name does the planner see that the (disk, finished_at) index already holds that order (the run
    id's name costs a sort of every row: about 25 ms of 75 at 100,000 runs)."""
    if connection.vendor == "sqlite":
        return RawSQL(f'"{RunResult._meta.db_table}".rowid', ()).asc()  # noqa: S611  (no input: a constant name)
    return F("run_id").asc()


def _seconds(promised: QuerySet[RunResult], threshold: float) -> dict[str, Any]:
    """The per-second samples of the period's newest SAMPLED_RUNS promised runs below the threshold.

    The runs are grouped by their limit (a period holds one or a few) and, on PostgreSQL, by their month, and
    each group's samples read by one arm of a UNION ALL with the group's floor as a number: no join from every
    sample back to its run's result, and each arm reads one month's partition (a run_id list alone would probe
    the index of every month, some 400 ms for 300 runs over ten years)."""
    newest = promised.order_by("-finished_at", "-run_id").values_list("run_id", "limit_iops", "run__created_at")
    groups: dict[tuple[date | None, float], list[int]] = {}
    for run_id, limit, created in newest[:SAMPLED_RUNS]:
        if limit is not None:  # promised: never None
            month = partitions.month_of(created) if partitions.partitioned() else None
            groups.setdefault((month, limit), []).append(run_id)
    read = sum(len(ids) for ids in groups.values())
    if not read:
        return {"seconds": 0, "below": 0, "below_share": None, "runs": 0, "newest_runs_read": 0}
    table, arms, params = RunSample._meta.db_table, list[str](), list[float | int | date]()
    for (month, limit), ids in groups.items():
        arms.append(
            f"SELECT run_id, COALESCE(read_iops, 0) + COALESCE(write_iops, 0) AS level, %s AS floor FROM {table} "  # noqa: S608  (the model's table)
            f"WHERE run_id IN ({', '.join(['%s'] * len(ids))}) AND (read_iops IS NOT NULL OR write_iops IS NOT NULL)"
            + (" AND month = %s" if month else "")
        )
        params += [limit * threshold, *ids, *([month] if month else [])]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT COUNT(*), COALESCE(SUM(CASE WHEN level < floor THEN 1 ELSE 0 END), 0), COUNT(DISTINCT run_id) "  # noqa: S608
            f"FROM ({' UNION ALL '.join(arms)}) AS seconds",
            params,
        )
        seconds, below_count, runs = cursor.fetchone()
    return {
        "seconds": seconds,
        "below": below_count,
        "below_share": below_count / seconds if seconds else None,
        "runs": runs,
        "newest_runs_read": read,
    }


def worst_hour_here(found: dict[str, Any], zone: tzinfo, now: datetime) -> None:
    """The worst hour as a page shows it: `found["worst_hour"]["shown"]`, the UTC hour on the reader's clock at
    the offset the zone has at the period's end (clock.utc_hour: the day rollups count by UTC hour)."""
    worst = found.get("worst_hour")
    if worst:
        end = datetime.fromisoformat(found["until"]) if found.get("until") else now
        worst["shown"] = clock.utc_hour(worst["hour"], zone, end)
        worst["shown_zone"] = getattr(zone, "key", str(zone))


def _worst_hour(hours: dict[int, list[float]]) -> dict[str, Any] | None:
    """The hour of the day (UTC, by each run's finish) whose runs had the lowest mean efficiency."""
    counted = {hour: summed for hour, summed in hours.items() if summed[0]}
    if not counted:
        return None
    hour, (runs, total) = min(counted.items(), key=lambda item: (item[1][1] / item[1][0], item[0]))
    return {"hour": hour, "zone": "UTC", "mean_efficiency": total / runs, "runs": int(runs)}


def _iso_ms(ms: int | None) -> str | None:
    return None if ms is None else _iso(datetime.fromtimestamp(ms / 1000, UTC))


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


def _by_profile(profiles: dict[str, ProfileTally], below: dict[str, int]) -> list[dict[str, Any]]:
    return [
        {
            "profile": name or "(no profile)",
            "runs": tally.runs,
            "below": below.get(name, 0),
            "no_promise": tally.no_promise,
            "below_share": below.get(name, 0) / tally.runs if tally.runs else None,
        }
        for name, tally in sorted(profiles.items())
    ]
