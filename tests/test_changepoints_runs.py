"""Change points on real runs: fio over SSH (test sshd, real Celery worker), its rate limit halved midway."""

from __future__ import annotations

import statistics

import pytest

from jobs.models import ChangePoint, Disk, Run, RunResult
from jobs.runs import queueing
from tests.builders import quick_profile, target_dir, team_with_host, wait_final

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_halving_fios_rate_limit_between_real_runs_is_found_at_the_first_slower_run(
    fio_installed, sshd, worker, tmp_path
):
    team, host = team_with_host(sshd)
    disk = Disk.objects.create(host=host, label="tmp", target_path=target_dir(tmp_path), disk_type="custom")
    profile = quick_profile(team, name="capped", runtime_s=2, extra_options={"rate_iops": "400"})
    runs = []
    for rate in ["400"] * 5 + ["200"] * 5:
        if profile.extra_options["rate_iops"] != rate:
            profile.extra_options = {"rate_iops": rate}
            profile.save()
        run = wait_final(queueing.request_run(disk, profile), timeout=120)
        assert run.state == Run.State.SUCCEEDED, run.explanation
        runs.append(run)

    change = ChangePoint.objects.get(disk=disk, metric="iops")
    assert change.run_id == runs[5].pk and change.at == runs[5].finished_at
    # The levels are the medians of what the result rows keep of fio's numbers.
    kept = dict(RunResult.objects.filter(run__in=runs).values_list("run_id", "total_iops"))
    measured = [kept[run.pk] for run in runs]
    assert change.before == statistics.median(measured[:5]) and change.after == statistics.median(measured[5:])
    assert -55 < change.change_percent < -45 and change.direction == "worse" and change.p_value < 0.01
    assert (change.runs_before, change.runs_after, change.profile_name) == (5, 5, "capped")
