"""A sweep end to end: real fio over the real sshd, a real Celery worker and Redis (issue 31's "done when")."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from jobs.models import Disk, Run, RunSet
from jobs.runs import queueing
from jobs.sets import cancelling, requesting
from tests.builders import quick_profile, target_dir, team_with_host, wait_final, wait_state

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def sweep_of(team, axes: dict[str, str], runtime_s: int):
    # libaio without O_DIRECT: the depth is taken and reported, and tmpfs takes it.
    return quick_profile(team, name="sweep", ioengine="libaio", runtime_s=runtime_s, sweep_axes=axes)


def test_a_3x2_sweep_runs_six_points_in_order_holding_the_disk_and_ends_with_its_curves(
    fio_installed, sshd, worker, tmp_path
):
    team, host = team_with_host(sshd)
    disk = Disk.objects.create(host=host, label="tmp", target_path=target_dir(tmp_path), disk_type="custom",
                               spec_iops=50000)  # fmt: skip
    profile = sweep_of(team, {"iodepth": "1,4,16", "block_size_bytes": "4k,64k"}, runtime_s=1)

    run_set = requesting.request_sweep(disk, profile)
    other = queueing.request_run(disk, quick_profile(team, name="plain", runtime_s=1))
    run_set = wait_final(run_set, timeout=120)
    other = wait_final(other)

    assert run_set.state == RunSet.State.SUCCEEDED, run_set.explanation
    points = list(run_set.members.order_by("set_index"))
    assert len(points) == 6 and all(p.state == Run.State.SUCCEEDED for p in points)
    for point in points:
        # Each point ran what it says: fio's own report of its depth and block size.
        job = point.summary
        assert job["read"]["iops"] > 0
        assert f"iodepth={point.set_point['iodepth']}" in point.command
        assert f"bs={point.set_point['block_size_bytes']}" in point.command
    # One after another, in the plan's order, and the other run only after the last point.
    assert all(a.finished_at <= b.started_at for a, b in itertools.pairwise(points))
    assert other.state == Run.State.SUCCEEDED and other.started_at >= points[-1].finished_at
    result = run_set.result
    assert [p["run"] for p in result["points"]] == [p.pk for p in points]
    assert all(p["iops"] > 0 and p["p99_us"] > 0 for p in result["points"])
    assert result["axis"] == "iodepth"
    assert [c["label"] for c in result["curves"]] == ["block size 4k", "block size 64k"]
    for curve in result["curves"]:
        assert curve["knee_text"].startswith(("knee at QD ", "no knee: "))
        assert (curve["knee"] is None) == curve["knee_text"].startswith("no knee")


def test_cancelling_a_sweep_mid_way_stops_the_running_point_and_keeps_the_finished_ones(
    fio_installed, sshd, worker, tmp_path
):
    team, host = team_with_host(sshd)
    disk = Disk.objects.create(host=host, label="tmp", target_path=target_dir(tmp_path), disk_type="custom")
    run_set = requesting.request_sweep(disk, sweep_of(team, {"iodepth": "1,2,4"}, runtime_s=4))
    first, second, third = run_set.members.order_by("set_index")
    wait_state(second, Run.State.RUNNING)

    cancelling.cancel(run_set)
    run_set = wait_final(run_set, timeout=60)

    first.refresh_from_db()
    second.refresh_from_db()
    third.refresh_from_db()
    assert run_set.state == RunSet.State.CANCELLED
    assert first.state == Run.State.SUCCEEDED and first.summary["read"]["iops"] > 0
    assert second.state == Run.State.CANCELLED
    assert third.state == Run.State.CANCELLED and third.started_at is None
    assert run_set.result["points"][0]["iops"] == pytest.approx(first.summary["read"]["iops"], rel=0.01)
    assert list(Path(target_dir(tmp_path)).iterdir()) == []
