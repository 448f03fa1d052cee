"""The host's telemetry during a real run (issue 33): read once a second by the host's observation step over the
session already open (its SFTP channel: no new login, no new command on the host), stored, and given back aligned
with the run's IOPS samples by the API, the CSV and the run page's chart data. A real sshd, real fio, a real worker."""

from __future__ import annotations

import csv
import io

import pytest

from jobs.models import Disk, HostSample, Run, RunSample
from jobs.runs import queueing
from tests.builders import owner_client_of, quick_profile, team_with_host, wait_final

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_a_run_keeps_its_hosts_seconds_aligned_with_its_iops(fio_installed, sshd_factory, worker, tmp_path):
    server = sshd_factory()
    team, host = team_with_host(server)
    target = tmp_path / "bench"
    target.mkdir()
    disk = Disk.objects.create(host=host, label="tmp", target_path=str(target), disk_type="custom")
    logins_before = server.handle.log().count("Accepted publickey for ")

    run = wait_final(queueing.request_run(disk, quick_profile(team, runtime_s=5)))

    assert run.state == Run.State.SUCCEEDED, run.explanation
    seconds = HostSample.of_run(run)
    samples = list(RunSample.objects.filter(run=run).values_list("t_s", flat=True))
    elapsed = run.progress["elapsed_s"]
    # About one a second while it ran, on the samples' own time axis.
    assert len(seconds) >= 3, seconds
    assert all(0 < s["t_s"] <= elapsed + 1.5 for s in seconds), [s["t_s"] for s in seconds]
    assert min(s["t_s"] for s in seconds) <= max(samples)
    for second in seconds:
        assert 99 <= sum(second["cpu"][k] for k in ("user", "system", "iowait", "steal", "idle")) <= 101
        assert second["memory"]["total_bytes"] > 0 and "load1" in second
    # One login for the run and its observation together: the telemetry opened none of its own.
    assert server.handle.log().count("Accepted publickey for ") - logins_before == 1

    client = owner_client_of(team)
    answer = client.get(f"/api/v1/runs/{run.pk}/telemetry/")
    assert answer.status_code == 200
    assert [s["t_s"] for s in answer.json()["seconds"]] == [s["t_s"] for s in seconds]
    rows = list(
        csv.reader(io.StringIO(b"".join(client.get(f"/runs/{run.pk}/telemetry.csv").streaming_content).decode()))
    )
    assert rows[0][:3] == ["t_s", "time_utc", "cpu_user_percent"] and len(rows) - 1 == len(seconds)
    assert [float(r[0]) for r in rows[1:]] == [s["t_s"] for s in seconds]
    assert rows[1][1].endswith("Z") or "+00:00" in rows[1][1]
    chart = client.get(f"/runs/{run.pk}/series.json").json()["telemetry"]
    assert chart["count"] == len(seconds) and chart["lines"]["cpu_busy"]["points"][0]["x"] == seconds[0]["t_s"]
