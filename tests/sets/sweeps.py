"""Sweeps made and ended without a worker, as the set tests share them: a sweep profile, a group's three disks, its
members in order, a member ended as its collection would end it, and a whole sweep run to its end with a curve of
known numbers."""

from __future__ import annotations

from django.test import TestCase
from django.utils import timezone

from jobs.models import Disk, Run, RunSample, RunSet
from jobs.runs import states
from jobs.sets import advancing, requesting
from tests.factories import DiskFactory, HostFactory, ProfileFactory, TeamFactory, fio_summary


def sweep_profile(team, **fields):
    defaults = {"team": team, "name": "qd sweep", "runtime_s": 5, "sweep_axes": {"iodepth": "1,4,16"}}
    return ProfileFactory(**(defaults | fields))


def three_disks(**third) -> list[Disk]:
    """A team's disks a, b and c, each on a host of its own (host-1 to host-3): a group's or a group-size sweep's;
    `third` sets fields of c."""
    team = TeamFactory()
    hosts = [HostFactory(team=team, name=f"host-{n}") for n in (1, 2, 3)]
    return [DiskFactory(host=hosts[0], label="a"), DiskFactory(host=hosts[1], label="b"),
            DiskFactory(host=hosts[2], label="c", **third)]  # fmt: skip


def members(run_set: RunSet) -> list[Run]:
    return list(run_set.members.order_by("set_index"))


def succeed(run: Run, iops: float, p99_us: float) -> None:
    """End a member as its collection would: its summary stored, then succeeded."""
    summary = fio_summary(read_iops=iops, block_size=run.parameters["block_size_bytes"])
    summary["read"]["clat_us"] = {"p50": p99_us / 2, "p99": p99_us, "p99_9": p99_us * 1.5}
    Run.objects.filter(pk=run.pk).update(summary=summary)
    run.refresh_from_db()
    assert states.finish(run, Run.State.SUCCEEDED, "finished", from_states=Run.ACTIVE_STATES)


def measured(member: Run, iops: float, seconds: int = 4) -> None:
    """A claimed member ended succeeded as its collection ends it: started now, its host saying how long it ran,
    one sample a second at `iops`."""
    Run.objects.filter(pk=member.pk).update(
        started_at=timezone.now(), progress={"elapsed_from": "host", "elapsed_s": seconds}
    )
    RunSample.objects.bulk_create(RunSample(run=member, t_s=t, read_iops=iops) for t in range(1, seconds + 1))
    succeed(member, iops, 100)


def fail(run: Run, why: str = "fio exited with status 1") -> None:
    """End a member as a failed run."""
    run.refresh_from_db()
    assert states.finish(run, Run.State.FAILED, why, from_states=Run.ACTIVE_STATES)


def run_sweep(disk, profile, curve, django_capture_on_commit_callbacks) -> RunSet:
    """A sweep whose points measure `curve` ((IOPS, p99 µs) per point), ended as its worker would end it."""
    with django_capture_on_commit_callbacks():
        run_set = requesting.request_sweep(disk, profile)
        for member, (iops, p99) in zip(members(run_set), curve, strict=True):
            if member.state == Run.State.PENDING:
                states.claim(member)
            succeed(member, iops, p99)
        advancing.advance(run_set.pk)
    run_set.refresh_from_db()
    return run_set


def finished_sweep(disk, profile, numbers: list[tuple[float, float] | None]) -> RunSet:
    """A sweep of `profile` on `disk` whose points ended with (IOPS, p99 µs) in order, None for a point that failed,
    and the sweep ended. Its next steps are not sent in a test's transaction (captured, not run); in a test that
    commits they go to the test's own broker (the `broker` fixture), where no worker takes them."""
    with TestCase.captureOnCommitCallbacks(execute=False):
        run_set = requesting.request_sweep(disk, profile)
        for member, measured in zip(members(run_set), numbers, strict=True):
            member.refresh_from_db()
            if member.state == Run.State.PENDING:
                states.claim(member)
            if measured is None:
                fail(member, "fio aborted: the test said so")
            else:
                succeed(member, *measured)
        advancing.advance(run_set.pk)
    run_set.refresh_from_db()
    return run_set
