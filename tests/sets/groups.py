"""Groups made and ended without a worker or fio, as the group history, compare, export, share and alert tests share
them: each member succeeds with known IOPS, ten per-second samples at that rate, and the same start, so that every
total (the all-running one too) is known."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.test import TestCase
from django.utils import timezone

from jobs.models import Run, RunSample, RunSet
from jobs.runs import states
from jobs.sets import advancing, requesting
from tests.sets.sweeps import fail, members, succeed

SECONDS = 10


def finished_group(disks, profile, iops: list[float | None], *, plan: dict | None = None,
                   at: datetime | None = None) -> RunSet:  # fmt: skip
    """A group of `profile` on `disks` whose members measured `iops` in order (None: the member failed), ended at
    `at` (now by default). Its next steps are captured, not run: call the alert hook yourself."""
    start = (at or timezone.now()) - timedelta(seconds=SECONDS)
    with TestCase.captureOnCommitCallbacks(execute=False):
        run_set = requesting.create_group(disks, profile)
        if plan:
            RunSet.objects.filter(pk=run_set.pk).update(plan=run_set.plan | plan)
        states.claim_group(run_set.pk)
        for member, measured in zip(members(run_set), iops, strict=True):
            Run.objects.filter(pk=member.pk).update(
                started_at=start, progress={"elapsed_from": "host", "elapsed_s": SECONDS}
            )
            member.refresh_from_db()
            if measured is None:
                fail(member)
                continue
            RunSample.objects.bulk_create(RunSample(run=member, t_s=t, read_iops=measured) for t in range(1, 11))
            succeed(member, measured, 900.0)
        advancing.advance(run_set.pk)
    if at is not None:
        RunSet.objects.filter(pk=run_set.pk).update(finished_at=at)
    run_set.refresh_from_db()
    return run_set
