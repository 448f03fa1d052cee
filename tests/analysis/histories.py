"""Runs measured at a known time with known IOPS, from which compliance, stability and the heatmap are worked out
on histories whose truth is known: what the compliance tests and the pages that show their answers share."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from jobs.models import Disk, Run, RunResult, RunSample
from tests.factories import RunFactory, fio_summary

NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)  # a Wednesday


def measured(
    disk: Disk,
    *,
    at: datetime,
    iops: float,
    seconds: list[float] | None = None,
    profile_name: str = "randread",
    snapshot: bool = True,
) -> Run:
    """A succeeded 60 s run of 4 KiB reads finished at `at` that measured `iops` (and per second, `seconds`)."""
    run = RunFactory(
        disk=disk,
        state=Run.State.SUCCEEDED,
        profile_name=profile_name,
        started_at=at - timedelta(seconds=60),
        finished_at=at,
        summary=fio_summary(read_iops=iops),
        limits_snapshot=disk.limits_snapshot(block_size=4096) if snapshot else {},
    )
    if seconds is not None:
        RunSample.objects.bulk_create(RunSample(run=run, t_s=t, read_iops=v) for t, v in enumerate(seconds, 1))
    RunResult.record(run)
    return run
