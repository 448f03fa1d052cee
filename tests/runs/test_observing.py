"""Watching without touching (issue 15): one persistent SSH session per host per worker, and observation that
starts nothing on the host. A real sshd (its own, so its log holds only this test's sessions), real fio, a
real Celery worker and Redis.

The sshd logs at LogLevel VERBOSE: "Accepted publickey for" is a login, "Starting session: command" a shell
on the host (one serves many commands), "Starting session: subsystem 'sftp'" an SFTP channel.
"""

from __future__ import annotations

import signal
import time

import psutil
import pytest

from jobs import ssh
from jobs.hosts import connecting
from jobs.models import Disk, Run
from jobs.runs import queueing, watching
from tests.builders import quick_profile, team_with_host, wait_final, wait_state, wrappers_of

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def _log(server) -> bytes:
    return server.handle.log_path.read_bytes()


def _counts(text: bytes) -> dict[str, int]:
    return {
        "logins": text.count(b"Accepted publickey for "),
        "commands": text.count(b"Starting session: command"),
        "sftp": text.count(b"Starting session: subsystem 'sftp'"),
    }


def _disks(host, tmp_path, n: int) -> list[Disk]:
    disks = []
    for i in range(n):
        target = tmp_path / f"bench{i}"
        target.mkdir()
        disks.append(Disk.objects.create(host=host, label=f"d{i}", target_path=str(target), disk_type="custom"))
    return disks


def _three_running(server, tmp_path, runtime_s: int) -> tuple[list[Run], int]:
    """Three runs on three disks of one host, all running; and where the sshd log stood before them."""
    team, host = team_with_host(server)
    profile = quick_profile(team, runtime_s=runtime_s)
    before = len(_log(server))
    runs = [queueing.request_run(disk, profile) for disk in _disks(host, tmp_path, 3)]
    for run in runs:
        wait_state(run, Run.State.RUNNING)
    return runs, before


def test_a_step_past_its_look_budget_leaves_the_other_runs_for_the_next_steps_in_turn(
    fio_installed, sshd_factory, worker, tmp_path, monkeypatch
):
    server = sshd_factory()
    runs, _ = _three_running(server, tmp_path, runtime_s=10)
    due = list(Run.objects.filter(pk__in=[run.pk for run in runs]).select_related("disk__host"))
    memory = watching.HostMemory()
    memory.forget_all_but({run.pk for run in due})
    # No budget: each step looks at one run only (a step always looks at one), the one read longest ago.
    monkeypatch.setattr(watching, "LOOK_BUDGET_S", 0.0)
    with connecting.session(due[0].disk.host) as conn:
        steps = [[finding.run.pk for finding in watching._look(conn, due, memory)] for _ in range(3)]
        assert [len(step) for step in steps] == [1, 1, 1], steps
        assert sorted(pk for step in steps for pk in step) == sorted(run.pk for run in due), steps
        # Every run was read once (its wrapper's pid and start, its live figures): the next look is the first's.
        assert all(memory.watches[run.pk].pid for run in due)
        assert [finding.run.pk for finding in watching._look(conn, due, memory)] == steps[0]
        # With the budget back, one step looks at all three.
        monkeypatch.setattr(watching, "LOOK_BUDGET_S", 60.0)
        assert len(watching._look(conn, due, memory)) == 3
    assert [wait_final(run).state for run in runs] == [Run.State.SUCCEEDED] * 3


def test_three_runs_on_one_host_cost_one_login_and_watching_them_starts_nothing_there(
    fio_installed, sshd_factory, worker, tmp_path
):
    server = sshd_factory()
    runs, before = _three_running(server, tmp_path, runtime_s=10)
    # Their figures are looked at (as by the overview's open rows), so they are read every 2 s.
    Run.want_progress(Run.objects.filter(pk__in=[run.pk for run in runs]))
    # From here until the live figures of all three have come in, only the host's observation steps talk to it.
    watching_from = len(_log(server))
    deadline = time.monotonic() + 8
    live: list[dict] = []
    while time.monotonic() < deadline:
        live = [Run.objects.get(pk=run.pk).progress for run in runs]
        if all(progress.get("read_iops", 0) > 0 and progress.get("iops_at_s", 0) >= 2 for progress in live):
            break
        time.sleep(0.2)
    watched = _counts(_log(server)[watching_from:])
    assert all(Run.objects.get(pk=run.pk).state == Run.State.RUNNING for run in runs)
    runs = [wait_final(run) for run in runs]
    assert [run.state for run in runs] == [Run.State.SUCCEEDED] * 3, [run.explanation for run in runs]
    total = _counts(_log(server)[before:])
    assert total["logins"] == 1, total
    assert 1 <= total["sftp"] <= ssh.MAX_SFTP_CHANNELS, total  # a second one opens only while one is busy
    # The launches' preflights and launches (two commands each) and the clean-ups ran in the session's
    # long-lived shells: a shell is started only for commands at the same moment. Watching starts none.
    assert 1 <= total["commands"] <= 3, total
    assert watched == {"logins": 0, "commands": 0, "sftp": 0}, watched
    # The live figures came over the session all the same, and the results.
    assert all(progress.get("read_iops", 0) > 0 and progress.get("iops_at_s", 0) >= 2 for progress in live), live
    for run in runs:
        assert run.progress.get("elapsed_from") == "host"
        assert run.summary["read"]["iops"] > 0


def test_a_session_dropped_while_several_runs_are_active_loses_none_and_starts_none_twice(
    fio_installed, sshd_factory, worker, tmp_path
):
    server = sshd_factory()
    runs, before = _three_running(server, tmp_path, runtime_s=8)
    wrappers = {run.pk: wrappers_of(run) for run in runs}
    # The sshd process serving the worker's session (the listener's children) dies: the connection drops.
    sessions = psutil.Process(server.handle.process.pid).children()
    assert sessions, "the worker holds no session to the host"
    for session in sessions:
        session.send_signal(signal.SIGKILL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not all(run.is_final for run in runs):
        for run in runs:
            run.refresh_from_db()
            wrappers[run.pk] |= wrappers_of(run)
        time.sleep(0.2)
    runs = [wait_final(run) for run in runs]
    assert [run.state for run in runs] == [Run.State.SUCCEEDED] * 3, [run.explanation for run in runs]
    assert all(len(found) == 1 for found in wrappers.values()), wrappers
    for run in runs:
        assert run.summary["runtime_s"] == pytest.approx(8, abs=1)
    # It logged in again once, not once per run or per look.
    assert _counts(_log(server)[before:])["logins"] == 2
