"""Runs carrying the steady-state stamps and warnings a run's collection gives them, and those stamps and warnings:
what the stamp tests of the data (test_stamps_shown.py) and of the chart in a browser share."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from jobs.models import Disk, Run, RunResult
from tests.factories import RunFactory, fio_summary

FRESH = (
    "Fresh blocks: benchweb knows of no write that filled /data/gp2 (no preconditioning is on record), and reads "
    "of never-written blocks can be faster than the device: precondition the disk."
)
RQ = "rq_affinity of nvme1n1 is 1, not 2 as the pinned recipe wants; benchweb left it alone (the host is not tunable)."
STEADY = {"state": "steady", "by": "fio", "metric": "iops_slope", "limit": "0.300000%", "criterion": "0.1%",
          "window_s": 30, "at_s": 41}  # fmt: skip
NOT_STEADY = {"state": "not_steady", "by": "benchweb", "why": "the rounds' range is 31 % of their average",
              "window_s": 300.0}  # fmt: skip


def finished(disk: Disk, *, start: datetime, seconds: float, iops: float, **fields: Any) -> Run:
    """A run that did `iops` 4 KiB random reads for `seconds` from `start` (as tests/analysis/test_burst.py's), with the
    stamp and warnings given, its result recorded as a run's collection records it."""
    run = RunFactory(
        disk=disk,
        state=Run.State.SUCCEEDED,
        profile_name="4k randread",
        started_at=start - timedelta(seconds=7),
        finished_at=start + timedelta(seconds=seconds),
        summary=fio_summary(read_iops=iops) | {"runtime_s": seconds},
        limits_snapshot=disk.limits_snapshot(block_size=4096),
        **fields,
    )
    RunResult.record(run)
    return run
