"""Groups made and ended without a worker or fio, as the group tests share them.

`finished_group`: each member succeeds with known IOPS, ten per-second samples at that rate, and the same start, so
that every total (the all-running one too) is known (the history, compare, export, share and alert tests).
`group_on_one_host`: members that started a few milliseconds apart, each with its host's measured clock offset, its
limits, per-second samples with ramps at either end, and the group ended as its last member's collection would end
it (the group page tests)."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.test import TestCase
from django.utils import timezone

from jobs.models import Disk, Run, RunSample, RunSet
from jobs.runs import states
from jobs.sets import advancing, requesting
from tests.factories import ProfileFactory
from tests.sets.sweeps import fail, members, succeed

SECONDS = 10


def group_on_one_host(host, iops: list[float], seconds: int = 20, cap_iops: float | None = None) -> RunSet:
    """A group of len(iops) members on `host`'s disks, each limited to 1,600 IOPS, member n starting n × 7 ms after
    the first (its host's clock 1 ms ahead, ± 0.3 ms) and running `seconds` - 2n seconds (from 0), a per-second sample
    of its IOPS each: the last seconds are a ramp where the first members run alone."""
    disks = [Disk.objects.create(host=host, label=f"vol-{n}", target_path=f"/data/vol-{n}", disk_type="custom")
             for n in range(1, len(iops) + 1)]  # fmt: skip
    start = timezone.now() - timedelta(seconds=seconds + 10)
    with TestCase.captureOnCommitCallbacks(execute=False):
        run_set = requesting.request_group(disks, ProfileFactory(team=host.team, name="4k random read"))
        if cap_iops is not None:
            run_set.plan = run_set.plan | {"cap_iops": cap_iops}
            run_set.save(update_fields=["plan"])
        for n, (member, rate) in enumerate(zip(members(run_set), iops, strict=True)):
            begun = start + timedelta(seconds=n * 0.007 + 0.001)
            Run.objects.filter(pk=member.pk).update(
                started_at=begun, limits_snapshot={"effective_iops": 1600.0, "iops": 1600.0},
                clock_offset={"offset_s": 0.001, "uncertainty_s": 0.0003, "delay_s": 0.0006, "probes": 5},
                progress={"elapsed_from": "host", "elapsed_s": seconds - 2 * n},
            )  # fmt: skip
            wobble = [0.97, 1.02, 0.99, 1.03, 1.0, 0.98]
            RunSample.objects.bulk_create(
                RunSample(run=member, t_s=t, read_iops=rate * wobble[t % len(wobble)])
                for t in range(1, seconds + 1 - 2 * n)
            )
            succeed(member, rate, 180 + 40 * n)
        advancing.advance(run_set.pk)
    run_set.refresh_from_db()
    return run_set


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
