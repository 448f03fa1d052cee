"""Sweeps made as a person's Run now makes them (jobs.sets.requesting) and ended point by point through the state
machine, as the collection ends them (states.finish): for the page tests of sets, without a worker."""

from __future__ import annotations

from typing import Any

from django.test import TestCase

from jobs.models import Disk, Profile, Run, RunSet
from jobs.runs import queueing, states
from jobs.sets import advancing, requesting
from tests.factories import ProfileFactory, fio_summary


def sweep_profile(team: Any, **fields: Any) -> Profile:
    defaults = {"team": team, "name": "qd sweep", "runtime_s": 5, "sweep_axes": {"iodepth": "1,4,16"}}
    return ProfileFactory(**(defaults | fields))


def succeed(run: Run, iops: float, p99_us: float) -> None:
    """End a member as its collection would: its summary stored, then succeeded."""
    summary = fio_summary(read_iops=iops, block_size=run.parameters["block_size_bytes"])
    summary["read"]["clat_us"] = {"p50": p99_us / 2, "p99": p99_us, "p99_9": p99_us * 1.5}
    Run.objects.filter(pk=run.pk).update(summary=summary)
    run.refresh_from_db()
    assert states.finish(run, Run.State.SUCCEEDED, "finished", from_states=Run.ACTIVE_STATES)


def finished_sweep(disk: Disk, profile: Profile, numbers: list[tuple[float, float] | None]) -> RunSet:
    """A sweep of `profile` on `disk` whose points ended with (IOPS, p99 µs) in order; None: the point failed."""
    with TestCase.captureOnCommitCallbacks(execute=False):
        run_set = requesting.request_sweep(disk, profile)
        for member, measured in zip(run_set.members.order_by("set_index"), numbers, strict=True):
            member.refresh_from_db()
            if member.state == Run.State.PENDING:
                queueing.dispatch_due()  # as the beat tick claims a point its predecessor's end did not
                member.refresh_from_db()
            if measured is None:
                states.finish(member, Run.State.FAILED, "fio aborted: the test said so")
            else:
                succeed(member, *measured)
        advancing.advance(run_set.pk)
    run_set.refresh_from_db()
    return run_set
