"""Issue 31's "done when" for imported and ndisk64 sweeps: six fio outputs of the Ultra x8 report's shape made here
with the real fio and imported as sweeps, their axes read from the outputs; and the ndisk64 1/2/4 process sweep
run through the stand-in (the AIX binary cannot run here) over the real sshd and a real Celery worker."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from jobs import presets
from jobs.imports import sweeps
from jobs.models import Disk, Run, RunSet
from jobs.sets import requesting
from tests.builders import target_dir, team_with_host, wait_final
from tests.factories import DiskFactory, ProfileFactory

FIXTURES = Path(__file__).parent.parent / "fixtures"
STANDIN = FIXTURES / "ndisk64-standin.sh"

pytestmark = [pytest.mark.slow]


@pytest.mark.django_db
def test_six_outputs_made_here_with_real_fio_import_as_sweeps_whose_axes_the_outputs_state(fio_installed, tmp_path):
    subprocess.run(["sh", str(FIXTURES / "sweeps" / "make_sweep_fixtures.sh"), str(tmp_path)], check=True,
                   capture_output=True, timeout=120)  # fmt: skip
    made = sorted(tmp_path.glob("rand*"))
    assert len(made) == 6
    disk = DiskFactory(spec_iops=40_000)

    reads, writes = sweeps.import_sweeps(disk, [(path.name, path.read_text()) for path in made])

    assert reads.state == writes.state == RunSet.State.SUCCEEDED
    assert reads.plan["axes"] == [{"field": "block_size_bytes", "values": [4096, 65536]},
                                  {"field": "iodepth", "values": [64, 128]}]  # fmt: skip
    assert writes.plan["axes"] == [{"field": "iodepth", "values": [64, 128]}]
    for run_set in (reads, writes):
        for member in run_set.members.all():
            # Each point is the one fio printed: the job options (JSON) or the job line (text) of that output,
            # which the script named after what it ran.
            depth = member.set_point["iodepth"]
            assert f'"iodepth" : "{depth}"' in member.raw_output or f"iodepth={depth}" in member.raw_output
            assert Path(member.parameters["source"]).stem.endswith(f"qd{depth}")
        assert all(point["iops"] > 0 and point["p99_us"] > 0 for point in run_set.result["points"])
        assert run_set.result["axis"] == "iodepth"
        assert all(c["knee_text"].startswith(("knee at QD ", "no knee")) for c in run_set.result["curves"])
    assert [c["label"] for c in reads.result["curves"]] == ["block size 4k", "block size 64k"]


@pytest.mark.django_db(transaction=True)
def test_the_ndisk64_process_sweep_runs_1_2_and_4_processes_through_the_standin(sshd, worker, tmp_path):
    """ndisk64 cannot run here (AIX binary): a clearly named stand-in prints the report of -M 1, 2 or 4."""
    team, host = team_with_host(sshd, ndisk64_path=str(STANDIN))
    disk = Disk.objects.create(host=host, label="tmp", target_path=target_dir(tmp_path), disk_type="custom")
    preset = next(p for p in presets.SWEEP_PRESETS if p["name"] == "ndisk64: 4k random 50/50, 1/2/4 processes")
    profile = ProfileFactory(team=team, name="ndisk64 1/2/4", **preset["base"], sweep_axes=preset["axes"])

    run_set = wait_final(requesting.request_sweep(disk, profile), timeout=120)

    assert run_set.state == RunSet.State.SUCCEEDED, run_set.explanation
    members = list(run_set.members.order_by("set_index"))
    assert [m.set_point for m in members] == [{"jobs": 1}, {"jobs": 2}, {"jobs": 4}]
    for member, processes in zip(members, (1, 2, 4), strict=True):
        assert member.state == Run.State.SUCCEEDED and f" -M {processes} " in member.command
        assert member.summary["processes"] == processes  # what the report printed, one row a process
    result = run_set.result
    assert [p["point"]["jobs"] for p in result["points"]] == [1, 2, 4]
    assert [p["iops"] for p in result["points"]] == [pytest.approx(5013.3), pytest.approx(10020.5),
                                                     pytest.approx(20030.0)]  # fmt: skip
    assert result["axis"] == "jobs" and len(result["curves"]) == 1
    assert result["curves"][0]["knee_text"].startswith(("knee at processes ", "no knee"))
