"""Sweeps made and ended without a worker, for the tests of what shows them (the API, the CSV): members end through
the state machine (states.finish), as the collection ends them."""

from __future__ import annotations

from jobs.models import Disk, Profile, Run, RunSet
from jobs.runs import states
from jobs.sets import requesting
from tests.factories import ProfileFactory, fio_summary


def sweep_profile(team, **fields) -> Profile:
    defaults = {"team": team, "name": "qd sweep", "runtime_s": 5, "sweep_axes": {"iodepth": "1,4,16"}}
    return ProfileFactory(**(defaults | fields))


def sweep(disk: Disk, **fields) -> RunSet:
    """A sweep requested on disk (its first point claimed), of a profile made with `fields`."""
    return requesting.request_sweep(disk, sweep_profile(disk.team, **fields))


def members(run_set: RunSet) -> list[Run]:
    return list(run_set.members.order_by("set_index"))


def succeed(run: Run, iops: float, p99_us: float) -> None:
    """End a member as its collection would: its summary stored (p50 half and p99.9 1.5 times its p99), then
    succeeded."""
    summary = fio_summary(read_iops=iops, block_size=run.parameters["block_size_bytes"])
    summary["read"]["clat_us"] = {"p50": p99_us / 2, "p99": p99_us, "p99_9": p99_us * 1.5}
    Run.objects.filter(pk=run.pk).update(summary=summary)
    run.refresh_from_db()
    assert states.finish(run, Run.State.SUCCEEDED, "finished", from_states=Run.ACTIVE_STATES)


def fail(run: Run, why: str = "fio exited with status 1") -> None:
    run.refresh_from_db()
    assert states.finish(run, Run.State.FAILED, why, from_states=Run.ACTIVE_STATES)
