"""What one Prometheus scrape of /metrics reports, as prometheus_client metric families: per disk and workload
the latest run's numbers and the last 30 days' compliance, runs by state, the waits of the runs that are due, and
the workers that answer (jobs/metrics/api.py serves it, README "Prometheus and Grafana" lists the series).

The number of queries does not grow with the disks (bench/metrics.py measures 200 disks x 6 profiles): the
latest result of every disk and profile comes through the pointer the per-day rollup keeps to each series'
newest run (RunResultLatest), one read of those results with their disk, host and team; the compliance is
one grouped scan of the period's results (jobs/results/compliance.by_series); runs by state count only the runs
since a kept tally (jobs/metrics/tally.py); the waits are one grouped query. None of it reads the years kept.

What a run did not measure (the write latency of a read-only workload, the efficiency of a disk without a limit)
is left out, never reported as 0.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from datetime import datetime
from typing import Any

from django.db.models import Case, Count, F, Min, Q, QuerySet, When
from django.db.models.functions import Coalesce
from django.utils import timezone
from prometheus_client.core import GaugeMetricFamily, Metric

from jobs.metrics import tally, workers
from jobs.models import Alert, Disk, Run, RunResult, RunResultLatest, Team
from jobs.results import compliance

SERIES = ("team", "host", "disk", "profile")
COMPLIANCE_PERIOD = "30d"
NO_PROFILE = "(no profile)"
MICROSECONDS = 1e-6


class Scrape:
    """The families of one scrape for `teams` (a token's team, or every team for BENCHWEB_METRICS_TOKEN); an
    object with collect(), which is all prometheus_client.generate_latest asks of a registry."""

    def __init__(self, teams: list[Team], now: datetime | None = None) -> None:
        self.teams = {team.pk: team.name for team in teams}
        self.now = now or timezone.now()

    def collect(self) -> Iterator[Metric]:
        began = time.perf_counter()
        disks = Disk.objects.filter(team_id__in=list(self.teams))
        yield from _latest(disks)
        yield from _compliance(disks, self.now)
        yield from _runs(self.teams, self.now)
        yield from _alerts(self.teams)
        yield from _waits(self.teams, self.now)
        yield from _workers()
        took = GaugeMetricFamily(
            "benchweb_scrape_duration_seconds",
            "How long this scrape took up to this line: its queries, the worker ping, writing the lines above.",
        )
        took.add_metric([], time.perf_counter() - began)
        yield took


def _gauge(name: str, documentation: str, labels: tuple[str, ...] = SERIES, unit: str = "") -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, labels=list(labels), unit=unit)


def latest_results(disks: QuerySet[Disk]) -> QuerySet[RunResult]:
    """The newest result of every disk of `disks` under every profile (by name) it ran, through the pointer the
    per-day rollup keeps to each series' newest run (RunResultLatest): no result row is read but these."""
    return RunResult.objects.filter(run_id__in=RunResultLatest.objects.filter(disk__in=disks).values("last_run"))


def _latest(disks: QuerySet[Disk]) -> Iterator[Metric]:
    iops = _gauge("benchweb_latest_run_iops", "IOPS (read and write) of the latest run of the disk and profile.")
    bandwidth = _gauge(
        "benchweb_latest_run_bandwidth_bytes_per_second",
        "Bandwidth (read and write) of the latest run of the disk and profile, in bytes per second.",
    )
    p99 = _gauge(
        "benchweb_latest_run_p99_latency_seconds",
        "p99 completion latency of the latest run of the disk and profile, per direction it measured.",
        (*SERIES, "direction"),
    )
    limit = _gauge(
        "benchweb_latest_run_limit_iops",
        "The baseline IOPS the disk promised at the latest run's block size (its limits snapshot).",
    )
    efficiency = _gauge(
        "benchweb_latest_run_efficiency_ratio",
        "The latest run's IOPS divided by the baseline it was promised (1 = the promise; above 1: burst or cache).",
    )
    finished = _gauge(
        "benchweb_latest_run_finished_timestamp_seconds", "When the latest run of the disk and profile finished."
    )
    columns = ("total_iops", "bw_bytes_per_s", "read_p99_us", "write_p99_us", "limit_iops", "finished_at")
    rows = latest_results(disks).values(*columns, "profile_name", **_names("disk__"))
    for row in rows.order_by("disk__host__name", "disk__label", "profile_name"):
        labels = _labels(row, row["profile_name"])
        _add(iops, labels, row["total_iops"])
        _add(bandwidth, labels, row["bw_bytes_per_s"])
        for direction in ("read", "write"):
            _add(p99, [*labels, direction], _seconds(row[f"{direction}_p99_us"]))
        if row["limit_iops"] and row["limit_iops"] > 0:
            _add(limit, labels, row["limit_iops"])
            _add(efficiency, labels, row["total_iops"] / row["limit_iops"] if row["total_iops"] is not None else None)
        _add(finished, labels, row["finished_at"].timestamp())
    yield from (iops, bandwidth, p99, limit, efficiency, finished)


def _compliance(disks: QuerySet[Disk], now: datetime) -> Iterator[Metric]:
    query = compliance.parse({"period": COMPLIANCE_PERIOD}, now=now)
    tolerance = f"{query.tolerance:g} %"
    runs = _gauge(
        "benchweb_compliance_runs",
        "Runs of the disk and profile in the last 30 days that were held against a promise (an IOPS limit).",
    )
    below = _gauge(
        "benchweb_compliance_below_ratio",
        f"Share of those runs below the promise less {tolerance} (the disk page's Compliance card, 30 days).",
    )
    names = {disk["pk"]: disk for disk in disks.values("pk", **_names(""))}  # the labels of every disk, one query
    for row in sorted(compliance.by_series(query, disks), key=lambda r: (r["disk_id"], r["profile_name"])):
        if not row["runs"]:
            continue  # no promise, nothing to be below
        labels = _labels(names[row["disk_id"]], row["profile_name"])
        runs.add_metric(labels, row["runs"])
        below.add_metric(labels, row["below"] / row["runs"])
    yield from (runs, below)


def _runs(teams: dict[int, str], now: datetime) -> Iterator[Metric]:
    counted = tally.runs_by_state(list(teams), now)
    runs = _gauge("benchweb_runs", "Runs kept in each state (the final states count all runs kept).", ("team", "state"))
    for team_id, name in sorted(teams.items(), key=lambda item: item[1]):
        for state in Run.State.values:
            runs.add_metric([name, state], counted.get((team_id, state), 0))
    yield runs


def _alerts(teams: dict[int, str]) -> Iterator[Metric]:
    """Unresolved alerts by kind and state (jobs/alerts/): 0 where there are none, so a rule can wait for > 0."""
    rows = (
        Alert.objects.filter(team_id__in=list(teams), state__in=Alert.UNRESOLVED)
        .values("team_id", "kind", "state")
        .annotate(n=Count("pk"))
        .order_by()
    )
    counted = {(row["team_id"], row["kind"], row["state"]): row["n"] for row in rows}
    alerts = _gauge("benchweb_alerts", "Alerts not resolved, by kind and state (open or acknowledged).",
                    ("team", "kind", "state"))  # fmt: skip
    for team_id, name in sorted(teams.items(), key=lambda item: item[1]):
        for kind in Alert.Kind.values:
            for state in Alert.UNRESOLVED:
                alerts.add_metric([name, kind, state], counted.get((team_id, kind, state), 0))
    yield alerts


def _waits(teams: dict[int, str], now: datetime) -> Iterator[Metric]:
    """Runs that are due and wait: pending ones (for their disk or host to be free) since they were due, and
    queued ones (claimed, for a worker to take the launch) since they were queued."""
    due = Q(state=Run.State.QUEUED) | Q(state=Run.State.PENDING) & (Q(not_before__isnull=True) | Q(not_before__lte=now))
    since = Case(
        When(state=Run.State.QUEUED, then=Coalesce("queued_at", "created_at")),
        default=Coalesce("not_before", "created_at"),
    )
    rows = Run.objects.filter(due, team_id__in=list(teams)).values("team_id", "state")
    found = {(row["team_id"], row["state"]): row for row in rows.annotate(n=Count("pk"), since=Min(since)).order_by()}
    waiting = _gauge(
        "benchweb_waiting_runs",
        "Runs that are due and wait: pending (for their disk or host) or queued (for a worker).",
        ("team", "state"),
    )
    oldest = _gauge(
        "benchweb_oldest_waiting_run_seconds",
        "How long the longest-waiting due run has waited: pending since it was due, queued since it was queued.",
        ("team", "state"),
    )
    for team_id, name in sorted(teams.items(), key=lambda item: item[1]):
        for state in (Run.State.PENDING, Run.State.QUEUED):
            row: Mapping[str, Any] = found.get((team_id, state), {"n": 0})
            waiting.add_metric([name, state], row["n"])
            if row["n"]:
                oldest.add_metric([name, state], max(0.0, (now - row["since"]).total_seconds()))
    yield from (waiting, oldest)


def _workers() -> Iterator[Metric]:
    seen = workers.seen()
    broker = _gauge("benchweb_broker_up", "1 if the Celery broker (Redis) answered the worker ping, else 0.", ())
    broker.add_metric([], 0 if seen.workers is None else 1)
    checked = _gauge("benchweb_workers_checked_timestamp_seconds", "When the workers were last pinged.", ())
    checked.add_metric([], seen.at)
    yield from (broker, checked)
    if seen.workers is None:
        return  # unknown, not none: the ping never went out
    answering = _gauge(
        "benchweb_workers_answering", f"Celery workers that answered a ping within {workers.PING_TIMEOUT:g} s.", ()
    )
    answering.add_metric([], len(seen.workers))
    up = _gauge("benchweb_worker_up", "1 for each Celery worker that answered the last ping.", ("worker",))
    for name in seen.workers:
        up.add_metric([name], 1)
    yield from (answering, up)
    yield from _worker_loads(seen.loads)


# Each worker's load over the last minute, as it answered the ping (jobs/metrics/load.py).
WORKER_LOAD = (
    ("headroom_ratio", "benchweb_worker_headroom_ratio",
     "What is left of the tighter of one core and the worker's threads over the last minute, 0 to 1: add a worker "
     "when it stays low (docs/operations/sizing.md)."),
    ("cpu_ratio", "benchweb_worker_cpu_ratio",
     "CPU seconds the worker process used per second over the last minute (1: one core busy throughout)."),
    ("rss_bytes", "benchweb_worker_resident_memory_bytes", "The worker process's resident memory."),
    ("threads_busy", "benchweb_worker_threads_busy", "Tasks the worker was running when asked."),
    ("threads", "benchweb_worker_threads", "The worker's pool size (tasks it can run at once)."),
    ("runs_watched", "benchweb_worker_runs_watched", "Running runs the worker's observation steps watched just now."),
    ("cpu_seconds_per_run_minute", "benchweb_worker_cpu_seconds_per_run_minute",
     "The worker's CPU per watched run-minute over the last minute: the sizing model, measured live."),
)  # fmt: skip


def _worker_loads(loads: Mapping[str, Mapping[str, Any]]) -> Iterator[Metric]:
    for key, name, documentation in WORKER_LOAD:
        family = _gauge(name, documentation, ("worker",))
        for worker, load in sorted(loads.items()):
            value = load.get(key)
            if isinstance(value, int | float) and not isinstance(value, bool):
                family.add_metric([worker], float(value))
        yield family


def _names(disk: str) -> dict[str, F]:
    """The team, host and disk names of a disk reached by the path `disk` ("" from Disk, "disk__" from a result)."""
    return {"team_name": F(f"{disk}team__name"), "host_name": F(f"{disk}host__name"), "disk_label": F(f"{disk}label")}


def _labels(names: Mapping[str, Any], profile_name: str) -> list[str]:
    """The values of SERIES, in its order."""
    return [names["team_name"], names["host_name"], names["disk_label"], profile_name or NO_PROFILE]


def _add(family: GaugeMetricFamily, labels: list[str], value: float | None) -> None:
    if value is not None:
        family.add_metric(labels, value)


def _seconds(microseconds: float | None) -> float | None:
    return None if microseconds is None else microseconds * MICROSECONDS
