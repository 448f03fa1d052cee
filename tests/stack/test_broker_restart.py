"""A Redis restart with a run active: the worker and beat reconnect, and the run ends once, with its result
(real Redis restarted on the same socket, real worker, beat, sshd and fio)."""

from __future__ import annotations

import time

import psutil
import pytest

from jobs.models import Disk, Run
from jobs.runs import queueing
from tests.builders import quick_profile, target_dir, team_with_host, wait_final, wait_state

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def _wrappers_of(run: Run) -> set[int]:
    """The pids of this run's benchmark wrapper (run.sh, started in the run's directory on the host)."""
    found = set()
    for process in psutil.process_iter(["cmdline"]):
        try:
            if "run.sh" in " ".join(process.info["cmdline"] or []) and str(run.uuid) in process.cwd():
                found.add(process.pid)
        except psutil.Error:
            continue
    return found


def _wait_for_reconnect(worker) -> None:
    deadline = time.monotonic() + 60
    while worker.log.read_text().count("Connected to redis") < 2:
        assert worker.process.poll() is None, f"the worker exited:\n{worker.log.read_text()[-4000:]}"
        assert time.monotonic() < deadline, f"the worker never reconnected:\n{worker.log.read_text()[-4000:]}"
        time.sleep(0.2)


def test_a_redis_restart_mid_run_keeps_the_worker_and_the_run_ends_once_with_its_result(
    fio_installed, sshd, redis_server, worker_factory, beat_factory, tmp_path
):
    if redis_server is None:
        pytest.skip("TEST_REDIS_URL names a Redis this suite must not restart")
    team, host = team_with_host(sshd)
    disk = Disk.objects.create(host=host, label="tmp", target_path=target_dir(tmp_path), disk_type="custom")
    worker = worker_factory()
    beat = beat_factory()
    run = queueing.request_run(disk, quick_profile(team, runtime_s=10))
    wait_state(run, Run.State.RUNNING)
    wrappers = _wrappers_of(run)
    time.sleep(3)  # a few polls in: the worker now holds one, waiting for its countdown or running it

    redis_server.restart()

    _wait_for_reconnect(worker)
    # The run goes on: its polls were lost with Redis's contents, and the beat's sweep picks it up.
    deadline = time.monotonic() + 90
    while not run.is_final and time.monotonic() < deadline:
        wrappers |= _wrappers_of(run)
        run.refresh_from_db()
        time.sleep(0.3)
    run = wait_final(run, timeout=5)
    assert worker.process.poll() is None, worker.log.read_text()[-4000:]
    assert beat.process.poll() is None, beat.log.read_text()[-4000:]
    assert "Unrecoverable error" not in worker.log.read_text()
    assert run.state == Run.State.SUCCEEDED, run.explanation
    assert run.summary["read"]["iops"] > 0
    assert run.summary["runtime_s"] == pytest.approx(10, abs=1)
    assert Run.objects.count() == 1
    assert len(wrappers) == 1, f"benchmark wrappers seen: {wrappers}"
    # The worker still takes new work after the restart.
    second = wait_final(queueing.request_run(disk, quick_profile(team, name="after the restart", runtime_s=2)))
    assert second.state == Run.State.SUCCEEDED, second.explanation
