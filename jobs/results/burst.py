"""Burst credits of a disk and of a run, from the disk's own history: the pages and the API show these.

The model is jobs/limits/burst.py (the bucket, the replay) and jobs/limits/knee.py (the drop in a run's
series); here are the rows it reads. Only succeeded runs count, each from its result row: its measured IOPS and
bytes per second over the runtime fio printed, ending at its finish. Anything else the disk did (failed runs,
the host's own I/O) is unknown, so the balance is a prediction, and the page and the API say so.

The replay starts full at the disk's first run or after the latest pause long enough to refill an empty bucket
(the balance before it cannot matter), and reads at most MAX_RUNS runs back: bounded work for any history.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from django.db.models.fields.json import KT
from django.utils import timezone

from jobs import limits
from jobs.limits.burst import Bucket, Passage, Usage, balance_at, bucket_for, replay
from jobs.limits.knee import Knee, find_knee
from jobs.models import Disk, Run, RunResult, RunSample

MAX_RUNS = 5_000
# The runs the disk page and the API list, newest first.
LISTED = 100

ASSUMES = (
    "Predicted from this disk's succeeded runs only: the disk is taken as idle between them (its own "
    "workload, failed runs and runs of other tools spend credits benchweb does not see), and full at the start."
)


@dataclass
class DiskBurst:
    bucket: Bucket | None
    why: str | None = None
    passages: list[Passage] = field(default_factory=list)  # time order
    full_from: str = ""
    now_s: float = 0.0
    assumes: str = ASSUMES

    @property
    def balance(self) -> float | None:
        return balance_at(self.bucket, self.passages, self.now_s) if self.bucket else None

    def passage(self, run_id: int) -> Passage | None:
        return next((p for p in reversed(self.passages) if p.run_id == run_id), None)

    def labels(self) -> dict[int, str]:
        """run id -> its label text, for the disk page's list of runs."""
        return {p.run_id: p.label_text for p in self.passages}

    def now(self) -> dict[str, Any] | None:
        """The balance now: credits, share of the bucket, time to refill, how long full speed would last."""
        if self.bucket is None or self.balance is None:
            return None
        bucket, balance = self.bucket, self.balance
        lasts = bucket.lasts(balance)
        return {
            "at": _iso(self.now_s),
            "balance": round(balance, 1),
            "balance_text": bucket.amount_text(balance),
            "percent": round(bucket.percent(balance), 1),
            "refill_seconds": round(bucket.refill_seconds(balance), 1),
            "refill_text": limits.duration_text(bucket.refill_seconds(balance)) if balance < bucket.capacity else "",
            "full_speed_seconds": round(lasts, 1),
            "full_speed_text": limits.duration_text(lasts),
            "exhausts_at": _iso(self.now_s + lasts),
        }

    def as_dict(self) -> dict[str, Any]:
        """The API's answer (GET /api/v1/disks/{id}/burst/)."""
        if self.bucket is None:
            return {"model": None, "why": self.why, "now": None, "assumes": ASSUMES, "full_from": "", "runs": []}
        newest = list(reversed(self.passages))[:LISTED]
        return {
            "model": _model_dict(self.bucket),
            "why": None,
            "now": self.now(),
            "assumes": ASSUMES,
            "full_from": self.full_from,
            "runs": [_passage_dict(self.bucket, p) for p in newest],
        }


def _model_dict(bucket: Bucket) -> dict[str, Any]:
    return {
        "metric": bucket.metric,
        "unit": bucket.unit,
        "capacity": bucket.capacity,
        "capacity_text": bucket.amount_text(bucket.capacity),
        "refill_per_s": bucket.refill_per_s,
        "burst_per_s": bucket.burst_per_s,
        "min_io_bytes": bucket.min_io_bytes,
        "full_bucket_seconds": round(bucket.lasts(bucket.capacity), 1),
        "text": bucket.describe(),
    }


def _passage_dict(bucket: Bucket, passage: Passage) -> dict[str, Any]:
    return {
        "run": passage.run_id,
        "started_at": _iso(passage.start_s),
        "seconds": passage.seconds,
        "spend_per_s": passage.spend_per_s,
        "start_balance": round(passage.start_balance, 1),
        "start_percent": round(bucket.percent(passage.start_balance), 1),
        "end_balance": round(passage.end_balance, 1),
        "end_percent": round(bucket.percent(passage.end_balance), 1),
        "label": passage.label,
        "label_text": passage.label_text,
        "dry_after_s": None if passage.dry_after_s is None else round(passage.dry_after_s, 1),
    }


def disk_burst(disk: Disk, *, until: datetime | None = None, now: datetime | None = None) -> DiskBurst:
    """The disk's bucket and its runs replayed (those finished by `until`, default all), the balance as of
    `now` (default now); a DiskBurst without a bucket says why."""
    found, reason = disk.limits_or_reason()
    now_s = (now or timezone.now()).timestamp()
    if found is None:
        return DiskBurst(None, f"No credit bucket: the disk has no limits ({reason})", now_s=now_s)
    bucket = bucket_for(found)
    if isinstance(bucket, str):
        return DiskBurst(None, bucket, now_s=now_s)
    usages, full_from = _history(disk, bucket, until)
    return DiskBurst(bucket, passages=replay(bucket, usages), full_from=full_from, now_s=now_s)


def _history(disk: Disk, bucket: Bucket, until: datetime | None) -> tuple[list[Usage], str]:
    """The runs to replay in time order, newest back to the latest pause that refilled the bucket, and why
    the replay starts full there."""
    runs = Run.objects.filter(disk=disk, result__isnull=False)
    if until is not None:
        runs = runs.filter(finished_at__lte=until)
    # From the runs (KT reads a JSON key of the model queried; across a relation it reads the wrong column),
    # the one key of the summary, uncast: SQLite's text for a JSON null would cast to 0.
    rows = (
        runs.order_by("-finished_at", "-pk")
        .annotate(runtime=KT("summary__runtime_s"))
        .values_list("pk", "finished_at", "started_at", "runtime", "result__total_iops", "result__bw_bytes_per_s")
    )
    refill_all = bucket.capacity / bucket.refill_per_s
    newest_first: list[Usage] = []
    full_from = "the disk's first run: a new volume starts full"
    for run_id, finished, started, runtime, iops, bytes_per_s in rows.iterator(chunk_size=500):
        if finished is None:
            continue  # not reached: a run has a result row only once finished
        usage = _usage(run_id, finished, started, runtime, iops, bytes_per_s)
        if newest_first and newest_first[-1].start_s - (usage.start_s + usage.seconds) >= refill_all:
            full_from = (
                f"run {newest_first[-1].run_id}: the disk was idle for over {limits.duration_text(refill_all)} "
                "before it, enough to refill an empty bucket"
            )
            break
        if len(newest_first) == MAX_RUNS:
            full_from = f"run {newest_first[-1].run_id}, taken as full: the replay reads at most {MAX_RUNS:,} runs"
            break
        newest_first.append(usage)
    return newest_first[::-1], full_from


def _usage(
    run_id: int,
    finished: datetime,
    started: datetime | None,
    runtime: Any,
    iops: float | None,
    bytes_per_s: float | None,
) -> Usage:
    """A run's I/O: the runtime fio printed, ending at its finish; without one, from its start to its finish."""
    end = finished.timestamp()
    printed = _number(runtime)
    if printed is not None:
        seconds = printed
    else:
        seconds = max(0.0, end - started.timestamp()) if started else 0.0
    return Usage(run_id=run_id, start_s=end - seconds, seconds=seconds, iops=iops, bytes_per_s=bytes_per_s)


def _number(value: Any) -> float | None:
    """A JSON number as the database hands it over (a float on SQLite, text on PostgreSQL), else None."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) and number >= 0 else None


def applied_limit(passage: Passage | None) -> str | None:
    """Which limit applied to the run: the burst limit when burst served it (wholly or in part), the baseline
    when it ran at or below it, None when the model cannot say (no bucket, the run not counted)."""
    if passage is None or not passage.label:
        return None
    return "baseline" if passage.label == "baseline" else "burst"


def run_burst(run: Run) -> dict[str, Any] | None:
    """The run's burst facts for its page and the API: the predicted balance at its start, its label, the
    limit that applied, and the knee of its series if it has one; None when its disk has no credit bucket."""
    if run.state == Run.State.SUCCEEDED and run.finished_at is not None:
        history = disk_burst(run.disk, until=run.finished_at, now=run.finished_at)
        passage = history.passage(run.pk)
    elif run.started_at is not None:
        history = disk_burst(run.disk, until=run.started_at, now=run.started_at)
        passage = None
    else:
        return None
    bucket = history.bucket
    if bucket is None:
        return None
    start = passage.start_balance if passage else history.balance
    assert start is not None  # a bucket has a balance
    applied = applied_limit(passage)
    measured = ((run.summary or {}).get("total") or {}).get("iops")
    efficiency = limits.Efficiency.against(measured, run.limits_snapshot, applied)
    return {
        "start_balance": round(start, 1),
        "start_balance_text": bucket.amount_text(start),
        "start_percent": round(bucket.percent(start), 1),
        "label": passage.label if passage else "",
        "label_text": passage.label_text if passage else "not counted: the run has no result yet",
        "limit_applied": applied,
        "efficiency_percent": round(efficiency.applied_percent, 1) if efficiency and applied else None,
        "dry_after_s": passage.dry_after_s if passage else None,
        "model": bucket.describe(),
        "assumes": ASSUMES,
        "knee": _knee(run, bucket, start) if passage else None,
    }


def _knee(run: Run, bucket: Bucket, start_balance: float) -> dict[str, Any] | None:
    """Where the run's per-second IOPS fell from burst to baseline, with the measured burst time against the
    model's: how long the start balance lasts at the measured burst level."""
    samples = list(RunSample.of_run(run).order_by("t_s").values_list("t_s", "read_iops", "write_iops"))
    series = [(t, (read or 0.0) + (write or 0.0)) for t, read, write in samples if (read, write) != (None, None)]
    block_size = RunResult.objects.filter(run=run).values_list("block_size_bytes", flat=True).first()
    per_io = bucket.credits_per_io(block_size)
    if not series or per_io is None:
        return None
    knee: Knee | None = find_knee(
        [t for t, _ in series],
        [v for _, v in series],
        baseline=bucket.refill_per_s / per_io,
        burst=bucket.burst_per_s / per_io,
    )
    if knee is None:
        return None
    predicted = bucket.lasts(start_balance, knee.high * per_io)
    return {
        "at_s": knee.at_s,
        "burst_iops": round(knee.high, 2),
        "baseline_iops": round(knee.low, 2),
        "measured_burst_s": knee.at_s,
        "predicted_burst_s": None if math.isinf(predicted) else round(predicted, 1),
    }


def _iso(epoch_s: float) -> str | None:
    if not math.isfinite(epoch_s):
        return None
    return datetime.fromtimestamp(epoch_s, tz=UTC).isoformat().replace("+00:00", "Z")
