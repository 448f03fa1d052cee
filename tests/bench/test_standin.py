"""The capacity benches' fio stand-in (bench/standin/) is driven through benchweb's real path: a host whose logins
find it first on PATH runs a run that benchweb launches, watches, collects, parses and stores as a fio run, and the
figures stored are the recording's own, as benchweb's parser reads them from the recorded file (issue 34). What it
costs a host is measured by bench/fleet.py, not here."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from jobs.models import Disk, Run, RunResult, RunSample
from jobs.runs import queueing
from jobs.tools import fio
from tests.builders import quick_profile, target_dir, team_with_host, wait_final

BENCH = Path(__file__).resolve().parent.parent.parent / "bench"
sys.path.insert(0, str(BENCH))
from standin import build  # noqa: E402  (bench/ is not a package)

sys.path.remove(str(BENCH))

pytestmark = pytest.mark.slow  # compiles the stand-in and starts processes

# What the job file decides rather than the recording: the stand-in echoes the run's job options, as fio does.
FROM_THE_JOB_FILE = {"workload", "direct", "samples"}


@pytest.fixture(scope="module")
def standin_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("cc") is None:
        reason = "cc is missing: the fio stand-in is compiled (apt-get install gcc)"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    return build.build(tmp_path_factory.mktemp("standin"))


def test_the_stand_in_answers_the_version_check_as_fio_does(standin_bin):
    said = subprocess.run([standin_bin / "fio", "--version"], capture_output=True, text=True, check=True)
    assert said.stdout == "fio-3.33\n"
    refused = subprocess.run([standin_bin / "fio", "--server=sock:/tmp/x"], capture_output=True, text=True)
    assert refused.returncode == 1 and "unrecognized option '--server=sock:/tmp/x'" in refused.stderr


@pytest.mark.django_db(transaction=True)
def test_a_run_on_a_host_whose_fio_is_the_stand_in_succeeds_and_stores_the_recorded_figures(
    sshd_factory, worker, standin_bin, tmp_path
):
    sshd = sshd_factory()
    with (sshd.handle.workdir / "sshd_config").open("a") as config:
        config.write(f"SetEnv PATH={standin_bin}:{os.environ['PATH']}\n")
    sshd.handle.restart()
    team, host = team_with_host(sshd)
    disk = Disk.objects.create(host=host, label="standin", target_path=target_dir(tmp_path), disk_type="custom")
    # The recording's workload: 4k randrw 70/30, psync, 3 s, so that even its counters come back unscaled.
    profile = quick_profile(team, rw="randrw", read_percent=70, direct=True, extra_options={})

    run = wait_final(queueing.request_run(disk, profile))

    assert run.state == Run.State.SUCCEEDED, run.explanation
    assert run.exit_status == 0 and f'"jobname" : "benchweb-{run.uuid}' in run.raw_output
    assert run.raw_output.count('"fio version"') >= 3  # status documents every second, then the final one
    recorded = fio.parse_fio_json(build.RECORDING.read_text()).summary_with_bins()
    stored = {key: value for key, value in run.summary.items() if key not in FROM_THE_JOB_FILE}
    assert stored == {key: value for key, value in recorded.items() if key not in FROM_THE_JOB_FILE}
    assert run.summary["workload"]["rw"] == "randrw" and run.summary["direct"] is True
    result = RunResult.objects.get(run=run)
    assert result.total_iops == round(recorded["total"]["iops"], 2)
    assert result.bw_bytes_per_s == round(recorded["total"]["bw_bytes_per_s"])
    for direction in ("read", "write"):
        assert getattr(result, f"{direction}_iops") == round(recorded[direction]["iops"], 2)
        for percentile in ("p50", "p99", "p99_9"):
            kept = getattr(result, f"{direction}_{percentile}_us")
            assert kept == round(recorded[direction]["clat_us"][percentile], 2)
    samples = list(RunSample.objects.filter(run=run).order_by("t_s").values_list("t_s", flat=True))
    assert len(samples) == len(recorded["samples"]) and samples[-1] == recorded["samples"][-1]["t_s"]
