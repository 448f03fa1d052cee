"""Retention: old runs lose their raw output and per-second samples but keep their summaries, so the disk
charts (which read summaries and the per-run results) keep working; the hosts' telemetry seconds of that age go."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from django.db import transaction
from django.db.models import Q
from django.db.models.functions import Length
from django.utils import timezone

from jobs.models import HostSample, Run, RunSample

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
    # The hosts' telemetry seconds go with the runs' samples: older than the cut-off, whole.
    seconds = HostSample.objects.filter(at__lt=timezone.now() - timedelta(days=older_than_days))
    done.telemetry = seconds.count() if dry_run else seconds.delete()[0]
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
        samples = RunSample.objects.filter(run_id__in=ids)
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
