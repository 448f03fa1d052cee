"""The runaway watchdog's bound (runners.watchdog_seconds): the run's own time, its layout, two minutes more."""

from __future__ import annotations

from typing import Any

import pytest

from jobs import remote, runners
from jobs.models import Profile

MiB = 2**20
GiB = 2**30


def _fio(**fields: Any) -> dict[str, Any]:
    return Profile(tool=Profile.Tool.FIO, rw="randread", ioengine="libaio", **fields).parameters()


def _ndisk(**fields: Any) -> dict[str, Any]:
    return Profile(tool=Profile.Tool.NDISK64, pattern="random", **fields).parameters()


def test_a_60_s_run_on_a_device_is_stopped_two_minutes_after_its_runtime_at_most() -> None:
    params = _fio(runtime_s=60, ramp_time_s=0, size_bytes=100 * GiB)

    assert runners.watchdog_seconds(params, "block") == 60 + 120


def test_a_fio_run_in_a_directory_also_gets_its_ramp_and_the_time_to_lay_out_every_jobs_file() -> None:
    params = _fio(runtime_s=60, ramp_time_s=10, size_bytes=GiB, jobs=2)

    # 2 GiB at 20 MiB/s is 102.4 s, rounded up.
    assert runners.watchdog_seconds(params, "directory") == 60 + 10 + 103 + 120


@pytest.mark.parametrize(("kind", "layout_s"), [("directory", 52), ("block", 0)])
def test_an_ndisk64_run_gets_its_runtime_and_layout_but_no_ramp(kind: str, layout_s: int) -> None:
    # ndisk64 has no ramp: one left on the profile from when it ran fio does not reach its parameters.
    params = _ndisk(runtime_s=60, ramp_time_s=30, size_bytes=256 * MiB, jobs=4)

    assert runners.watchdog_seconds(params, kind) == 60 + layout_s + 120


def test_a_run_whose_kind_is_not_given_is_allowed_its_layout_which_only_ever_allows_more() -> None:
    params = _fio(runtime_s=60, size_bytes=200 * MiB)

    assert runners.watchdog_seconds(params) == runners.watchdog_seconds(params, "directory") == 60 + 10 + 120


def test_the_bound_is_minutes_past_the_runtime_not_five_of_them() -> None:
    for params in (_fio(runtime_s=60, size_bytes=None), _ndisk(runtime_s=60, size_bytes=MiB)):
        assert runners.watchdog_seconds(params, "block") - runners.expected_seconds(params) <= 120


def test_the_host_runs_the_tool_under_exactly_that_bound() -> None:
    params = _fio(runtime_s=60, ramp_time_s=5, size_bytes=None)
    plan = remote.Plan(
        run_uuid="0" * 32,
        run_dir="/home/bench/.benchweb/runs/" + "0" * 32,
        lock_path="/home/bench/.benchweb/locks/x.lock",
        argv=["fio", "job.fio"],
        limit_s=runners.watchdog_seconds(params, "block"),
        files={},
    )

    assert f"timeout -k 30 {60 + 5 + 120} " in remote.wrapper_script(plan)
