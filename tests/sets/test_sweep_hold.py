"""A sweep as one set of runs, without a worker: made whole or refused whole, its members claimed one after
another while it holds the disk, stopped on a failure when its profile says so, and ended with its own result.
Members end here through the state machine (states.finish), as the collection ends them; the end-to-end sweep
with real fio is in test_sweep_fio.py."""

from __future__ import annotations

import pytest

from jobs.alerts import evaluate
from jobs.models import Alert, AlertRule, Disk, Run, RunResult, RunSet
from jobs.runs import queueing, states
from jobs.runs.queueing import RunRefused
from jobs.sets import advancing, cancelling, requesting
from tests.factories import DiskFactory, ProfileFactory
from tests.sets.sweeps import members, run_sweep, succeed, sweep_profile

pytestmark = pytest.mark.django_db


def test_a_sweep_is_made_whole_with_one_member_per_point_and_only_the_first_claimed(django_capture_on_commit_callbacks):
    disk = DiskFactory()
    profile = sweep_profile(disk.team, sweep_axes={"iodepth": "1,4", "block_size_bytes": "4k,64k"})

    with django_capture_on_commit_callbacks():
        run_set = requesting.request_sweep(disk, profile)

    points = members(run_set)
    assert [m.set_point for m in points] == [
        {"iodepth": 1, "block_size_bytes": 4096}, {"iodepth": 1, "block_size_bytes": 65536},
        {"iodepth": 4, "block_size_bytes": 4096}, {"iodepth": 4, "block_size_bytes": 65536},
    ]  # fmt: skip
    assert [(m.parameters["iodepth"], m.parameters["block_size_bytes"]) for m in points] == [
        (1, 4096), (1, 65536), (4, 4096), (4, 65536)]  # fmt: skip
    assert [m.state for m in points] == ["queued", "pending", "pending", "pending"]
    assert points[1].limits_snapshot != points[0].limits_snapshot or disk.spec_iops is None
    assert run_set.state == RunSet.State.RUNNING and run_set.explanation == "running point 1 of 4"
    assert run_set.plan["total_s"] == 4 * 5 and len(run_set.plan["points"]) == 4


def test_a_point_the_safety_rules_refuse_refuses_the_sweep_and_nothing_is_written():
    disk = DiskFactory(kind=Disk.Kind.BLOCK, target_path="/dev/vdb", allow_destructive=False)
    # ndisk64 writes when its read share is under 100 %: the second point would write to the device.
    profile = sweep_profile(disk.team, tool="ndisk64", read_percent=100, size_bytes=2**20,
                            sweep_axes={"read_percent": "100,50"})  # fmt: skip

    with pytest.raises(RunRefused) as refused:
        requesting.request_sweep(disk, profile)

    assert refused.value.field == "profile"
    assert "point 2 of 2 (read share (-r) 50 %) is refused, so the whole sweep is, and nothing was started" in str(
        refused.value
    )
    assert not RunSet.objects.exists() and not Run.objects.exists()


def test_a_sweep_longer_than_the_teams_bound_is_refused_saying_how_it_fits():
    disk = DiskFactory()
    disk.team.sweep_bound_s = 60
    disk.team.save()

    with pytest.raises(RunRefused, match="longer than the team's bound of 1 min: it fits with at most 2 points"):
        requesting.request_sweep(disk, sweep_profile(disk.team, runtime_s=30, sweep_axes={"iodepth": "1-16 x2"}))
    assert not Run.objects.exists()


def test_a_sweep_profile_run_as_a_single_run_is_refused_naming_the_way():
    disk = DiskFactory()
    with pytest.raises(RunRefused, match="is a sweep: start it as one"):
        queueing.request_run(disk, sweep_profile(disk.team))


def test_the_sweep_holds_its_disk_between_points_and_other_runs_wait_naming_it(django_capture_on_commit_callbacks):
    disk = DiskFactory()
    with django_capture_on_commit_callbacks():
        run_set = requesting.request_sweep(disk, sweep_profile(disk.team))
        other = queueing.request_run(disk, ProfileFactory(team=disk.team))
    first, second, third = members(run_set)
    assert other.state == Run.State.PENDING

    with django_capture_on_commit_callbacks():
        succeed(first, 1000, 100)
        # The tick between two points claims nothing but the sweep's next one.
        queueing.dispatch_due()
    second.refresh_from_db()
    other.refresh_from_db()
    assert second.state == Run.State.QUEUED
    assert other.state == Run.State.PENDING
    assert other.explanation == f"waiting: disk held by sweep {run_set.pk} until its last point ends"

    with django_capture_on_commit_callbacks():
        succeed(second, 1900, 150)
        succeed(third, 2000, 400)
        assert advancing.advance(run_set.pk) == RunSet.State.SUCCEEDED
    other.refresh_from_db()
    assert other.state == Run.State.QUEUED  # the sweep's end hands the disk on, as a run's end does
    run_set.refresh_from_db()
    assert run_set.explanation == "finished: 3 of 3 points succeeded"
    curve = run_set.result["curves"][0]
    assert run_set.result["axis"] == "iodepth"
    assert curve["knee"]["axis"] == 4 and curve["knee"]["run"] == second.pk
    assert curve["knee_text"] == "knee at QD 4: 1,900 IOPS, p99 150 µs"
    assert [p["iops"] for p in run_set.result["points"]] == [1000, 1900, 2000]
    # A point is its set's, not one of the disk's results: the disk's charts do not zigzag with QD. Only the knee
    # stands for the sweep there, under a series of its own.
    assert list(RunResult.objects.values_list("run_id", "profile_name")) == [(second.pk, "qd sweep · knee")]


def test_a_failed_point_skips_the_rest_when_the_sweep_stops_on_a_failure(django_capture_on_commit_callbacks):
    disk = DiskFactory()
    with django_capture_on_commit_callbacks():
        run_set = requesting.request_sweep(disk, sweep_profile(disk.team, sweep_on_failure="stop"))
    first, second, third = members(run_set)

    with django_capture_on_commit_callbacks():
        states.finish(first, Run.State.FAILED, "fio aborted")
        advancing.advance(run_set.pk)
    second.refresh_from_db()
    third.refresh_from_db()
    run_set.refresh_from_db()
    assert (second.state, third.state) == (Run.State.SKIPPED, Run.State.SKIPPED)
    assert second.explanation == "skipped: point 1 ended failed and this sweep stops on a failure"
    assert run_set.state == RunSet.State.FAILED
    assert run_set.explanation == "finished: 0 of 3 points succeeded; point 1 failed: fio aborted"


def test_a_failed_point_is_shown_and_the_sweep_goes_on_by_default(django_capture_on_commit_callbacks):
    disk = DiskFactory()
    with django_capture_on_commit_callbacks():
        run_set = requesting.request_sweep(disk, sweep_profile(disk.team))
    first, second, _ = members(run_set)

    with django_capture_on_commit_callbacks():
        states.finish(first, Run.State.FAILED, "fio aborted")
    second.refresh_from_db()
    assert second.state == Run.State.QUEUED


def test_cancelling_a_sweep_ends_its_members_not_started_and_the_set(django_capture_on_commit_callbacks):
    disk = DiskFactory()
    with django_capture_on_commit_callbacks():
        run_set = requesting.request_sweep(disk, sweep_profile(disk.team))
    first = members(run_set)[0]
    with django_capture_on_commit_callbacks():
        succeed(first, 1000, 100)

    with django_capture_on_commit_callbacks():
        run_set = cancelling.cancel(run_set)

    assert [m.state for m in members(run_set)] == ["succeeded", "cancelled", "cancelled"]
    assert run_set.state == RunSet.State.CANCELLED
    assert run_set.explanation == "cancelled: 1 of 3 points succeeded"
    assert run_set.result["points"][0]["iops"] == 1000  # the finished point keeps its result


def test_a_second_sweep_waits_for_the_first_and_then_holds_the_disk(django_capture_on_commit_callbacks):
    disk = DiskFactory()
    with django_capture_on_commit_callbacks():
        first_set = requesting.request_sweep(disk, sweep_profile(disk.team))
        second_set = requesting.request_sweep(disk, sweep_profile(disk.team, name="again"))
    assert second_set.state == RunSet.State.PENDING
    assert second_set.explanation == f"waiting: disk held by sweep {first_set.pk} until its last point ends"

    with django_capture_on_commit_callbacks():
        for member in members(first_set):
            if member.state == Run.State.PENDING:
                queueing.dispatch_due()
                member.refresh_from_db()
            succeed(member, 1000, 100)
        advancing.advance(first_set.pk)
    second_set.refresh_from_db()
    assert second_set.state == RunSet.State.RUNNING
    assert members(second_set)[0].state == Run.State.QUEUED


def test_the_tick_ends_a_set_whose_advance_was_lost(django_capture_on_commit_callbacks):
    disk = DiskFactory()
    with django_capture_on_commit_callbacks():
        run_set = requesting.request_sweep(disk, sweep_profile(disk.team, sweep_axes={"iodepth": "1,2"}))
    for member in members(run_set):
        states.finish(member, Run.State.FAILED, "lost in a test")  # no on-commit callbacks: the advance is lost

    assert advancing.advance_stalled() == 1
    run_set.refresh_from_db()
    assert run_set.state == RunSet.State.FAILED and run_set.finished_at is not None


def test_a_sweeps_knee_is_trended_on_its_disk_as_a_series_and_a_move_of_it_is_said(
    django_capture_on_commit_callbacks,
):
    disk = DiskFactory(with_limits=True)
    profile = sweep_profile(disk.team, name="QD sweep")
    first = run_sweep(disk, profile, [(1000, 100), (1900, 150), (2000, 400)], django_capture_on_commit_callbacks)
    second = run_sweep(disk, profile, [(1000, 100), (1050, 300), (1080, 400)], django_capture_on_commit_callbacks)

    knees = list(RunResult.objects.filter(disk=disk).order_by("finished_at"))
    assert [(r.profile_name, r.total_iops) for r in knees] == [("QD sweep · knee", 1900), ("QD sweep · knee", 1000)]
    assert knees[0].run_id == members(first)[1].pk and knees[0].limit_iops == 4000
    assert second.result["moved"] == ["knee moved from QD 4 to QD 1"]
    assert second.explanation == "finished: 3 of 3 points succeeded; knee moved from QD 4 to QD 1"
    assert first.result["moved"] == []


def test_a_knee_below_the_promise_sweep_after_sweep_raises_the_below_promise_alert(django_capture_on_commit_callbacks):
    disk = DiskFactory(with_limits=True)  # 4,000 IOPS promised
    profile = sweep_profile(disk.team, name="QD sweep")
    wanted = AlertRule.of(disk.team_id, Alert.Kind.BELOW_PROMISE).consecutive_runs
    for _ in range(wanted):
        run_sweep(disk, profile, [(1000, 100), (1900, 150), (2000, 400)], django_capture_on_commit_callbacks)
        evaluate.series_recorded(disk.pk, ["QD sweep · knee"])  # what the sweep's end sends after its commit

    alert = Alert.objects.get(kind=Alert.Kind.BELOW_PROMISE)
    assert alert.title == f"Below the promise: QD sweep · knee on {disk}"
    assert "the latest 1,900 IOPS" in alert.summary
