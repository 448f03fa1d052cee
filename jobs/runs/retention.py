"""Retention: old runs lose their raw output and per-second samples but keep their summaries, so the disk
charts (which read summaries and the per-run results) keep working; the hosts' telemetry seconds of that age go.

On PostgreSQL the per-second tables are partitioned by month (jobs/models/partitions.py): a month entirely past the
cut-off is detached and dropped whole, in a moment whatever it holds, and only the month the cut-off falls in (and
a month still holding a run that must stay) loses its rows one by one, as on SQLite."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from django.db import connection, transaction
from django.db.models import Q
from django.db.models.functions import Length
from django.utils import timezone

from jobs.models import HostSample, Run, RunSample, partitions

BATCH = 500


@dataclass
class Pruned:
    runs: int = 0
    samples: int = 0
    raw_bytes: int = 0
    telemetry: int = 0  # host seconds (HostSample) older than the cut-off


def prunable(older_than_days: int) -> Q:
    """Finished runs older than the cut-off that still hold raw output or samples."""
    cutoff = timezone.now() - timedelta(days=older_than_days)
    return Q(finished_at__lt=cutoff, pruned_at__isnull=True, state__in=Run.FINAL_STATES)


def prune(older_than_days: int, *, dry_run: bool = False, progress: Callable[[Pruned], None] | None = None) -> Pruned:
    """Drop raw output, stderr and per-second samples of finished runs older than `older_than_days`, in
    batches (one transaction each, so an interrupted prune keeps what it did and loses nothing else)."""
    if older_than_days < 1:
        raise ValueError(f"--older-than must be at least 1 day, got {older_than_days}")
    done = Pruned()
    cutoff = timezone.now() - timedelta(days=older_than_days)
    gone: dict[str, list[date]] = {"jobs_runsample": [], "jobs_hostsample": []}
    if partitions.partitioned():
        if not dry_run:
            # The daily prune also makes this month's and the next month's tables, should no write have made them.
            partitions.ensure_ahead("jobs_runsample", timezone.now())
            partitions.ensure_ahead("jobs_hostsample", timezone.now())
        done.samples, done.telemetry, gone = drop_months(cutoff, dry_run=dry_run)
    # The hosts' telemetry seconds go with the runs' samples: older than the cut-off, whole. (A dry run leaves out
    # the months it counted whole; a prune finds them gone.)
    seconds = HostSample.objects.filter(at__lt=cutoff)
    for month in gone["jobs_hostsample"]:
        seconds = seconds.exclude(at__gte=_start(month), at__lt=_start(partitions.next_month(month)))
    done.telemetry += seconds.count() if dry_run else seconds.delete()[0]
    candidates = Run.objects.filter(prunable(older_than_days)).order_by("pk")
    last_pk = 0
    while True:
        batch = list(
            candidates.filter(pk__gt=last_pk)
            .annotate(raw_len=Length("raw_output") + Length("raw_stderr"))
            .values_list("pk", "raw_len")[:BATCH]
        )
        if not batch:
            return done
        ids = [pk for pk, _ in batch]
        last_pk = ids[-1]
        samples = RunSample.objects.filter(run_id__in=ids).exclude(month__in=gone["jobs_runsample"])
        if dry_run:
            done.samples += samples.count()
        else:
            with transaction.atomic():
                done.samples += samples.delete()[0]
                Run.objects.filter(pk__in=ids, pruned_at__isnull=True).update(
                    raw_output="", raw_stderr="", pruned_at=timezone.now()
                )
        done.runs += len(ids)
        done.raw_bytes += sum(length or 0 for _, length in batch)
        if progress:
            progress(done)


def drop_months(cutoff: datetime, *, dry_run: bool = False) -> tuple[int, int, dict[str, list[date]]]:
    """PostgreSQL: drop the month partitions entirely before `cutoff` (detach, then drop): of RunSample, a month
    whose runs are all finished before the cut-off, of HostSample every such month. (samples, seconds, the months
    of each table) dropped, or counted with dry_run."""
    dropped, gone = [0, 0], {"jobs_runsample": list[date](), "jobs_hostsample": list[date]()}
    for i, table in enumerate(gone):
        for part, month in partitions.months(table):
            if _start(partitions.next_month(month)) > cutoff:
                continue
            if table == "jobs_runsample" and _holds_a_kept_run(part, cutoff):
                continue
            dropped[i] += partitions.rows(part) if dry_run else partitions.drop(table, part)
            gone[table].append(month)
    return dropped[0], dropped[1], gone


def _holds_a_kept_run(part: str, cutoff: datetime) -> bool:
    """Whether a run whose samples are in the partition must keep them: not final, or finished after the cut-off.
    The runs between the partition's lowest and highest run id are asked (an index scan of both tables): ids grow
    with creation time, so they are the month's runs, and any other run among them only makes the answer
    careful."""
    with connection.cursor() as cursor:
        cursor.execute(f'SELECT min(run_id), max(run_id) FROM "{part}"')  # noqa: S608  (from the catalog)
        low, high = cursor.fetchone()
    if low is None:
        return False
    kept = Q(state__in=Run.FINAL_STATES, finished_at__lt=cutoff)
    return Run.objects.filter(pk__gte=low, pk__lte=high).exclude(kept).exists()


def _start(month: date) -> datetime:
    return datetime(month.year, month.month, 1, tzinfo=UTC)
