"""A launch whose answer is lost, a chain of polls that dies, a disk freed while beat is down (issue 12,
findings 3 and 7): a real sshd, real fio, a real Celery worker and Redis.

The session "freezing right after the launch command reached the host" is injected in this test process:
the launch runs here (launching.launch), with ssh.Connection.run wrapped so that the launch command really
runs on the host and then the session reports an error, as a frozen session would. Everything after that
(re-attaching, polling, collecting, the next run) is done by the real worker. The iptables test freezes a
real session instead (root only).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.db.models import F
from django.utils import timezone

from jobs import messages, remote, runners, ssh
from jobs.models import Disk, Run
from jobs.runs import launching, queueing, steps, sweeping
from jobs.ssh.shells import Shell
from tests.builders import quick_profile, target_dir, team_with_host, wait_final, wrappers_of
from tests.factories import RunFactory

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

LAUNCH_COMMAND = "mkdir launched"
real_run = ssh.Connection.run


def _queued(disk: Disk, profile) -> Run:
    """A run claimed for its disk, its launch left to the test (claim() would send it to the worker)."""
    run = queueing.create_run(disk, profile)
    now = timezone.now()
    Run.objects.filter(pk=run.pk).update(state=Run.State.QUEUED, queued_at=now, heartbeat_at=now)
    run.refresh_from_db()
    return run


def _freeze_after_the_launch_command(monkeypatch, *, runs_on_host: bool = True) -> None:
    """The launch command reaches the host (runs_on_host) or not, and its answer never comes back."""

    def run(self, command: str, *args, **kwargs):
        if LAUNCH_COMMAND not in command:
            return real_run(self, command, *args, **kwargs)
        if runs_on_host:
            real_run(self, command, *args, **kwargs)
        raise ssh.SSHError("timeout", "the session froze after the launch command (injected by the test)")

    monkeypatch.setattr(ssh.Connection, "run", run)


def _wait_final_counting_wrappers(run: Run, timeout: float = 90) -> tuple[Run, set[int]]:
    wrappers: set[int] = set()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        wrappers |= wrappers_of(run)
        run.refresh_from_db()
        if run.is_final:
            return run, wrappers
        time.sleep(0.1)
    raise AssertionError(f"run stayed {run.state} ({run.explanation}) for {timeout} s")


def _gone(path: str, timeout: float = 15) -> bool:
    deadline = time.monotonic() + timeout
    while Path(path).exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    return not Path(path).exists()


def _assert_held_and_reattached(first: Run, second: Run, wrappers: set[int], runtime_s: int = 4) -> None:
    assert first.state == Run.State.SUCCEEDED, first.explanation
    assert first.summary["read"]["iops"] > 100 and first.summary["runtime_s"] == pytest.approx(runtime_s, abs=1)
    assert len(wrappers) == 1, f"wrappers seen: {wrappers}"
    assert _gone(first.remote_dir), f"{first.remote_dir} is still on the host"
    second = wait_final(second)
    assert second.state == Run.State.SUCCEEDED, second.explanation
    assert second.queued_at >= first.finished_at  # it took the disk only once the first had ended


def test_a_lost_launch_answer_keeps_the_run_and_its_disk_and_collects_it_once(
    fio_installed, sshd, worker, tmp_path, monkeypatch
):
    team, host = team_with_host(sshd)
    disk = Disk.objects.create(host=host, label="tmp", target_path=target_dir(tmp_path), disk_type="custom")
    profile = quick_profile(team, runtime_s=4)
    first = _queued(disk, profile)
    _freeze_after_the_launch_command(monkeypatch)

    assert launching.launch(first.pk) == Run.State.LAUNCHING
    monkeypatch.undo()
    first.refresh_from_db()
    assert first.state == Run.State.LAUNCHING
    assert "launch answer lost; re-attaching by UUID" in first.explanation and "injected" in first.explanation
    assert first.remote_dir.endswith(str(first.uuid)) and Path(first.remote_dir, "launched").is_dir()
    second = queueing.request_run(disk, profile)
    assert second.state == Run.State.PENDING
    assert second.explanation == f"waiting: disk busy with run {first.pk}"

    first, wrappers = _wait_final_counting_wrappers(first)
    _assert_held_and_reattached(first, second, wrappers)


def test_a_launch_the_host_never_ran_is_launched_on_reattaching_exactly_once(
    fio_installed, sshd, worker, tmp_path, monkeypatch
):
    team, host = team_with_host(sshd)
    disk = Disk.objects.create(host=host, label="tmp", target_path=target_dir(tmp_path), disk_type="custom")
    profile = quick_profile(team, runtime_s=4)
    first = _queued(disk, profile)
    _freeze_after_the_launch_command(monkeypatch, runs_on_host=False)

    assert launching.launch(first.pk) == Run.State.LAUNCHING
    monkeypatch.undo()
    first.refresh_from_db()
    assert not Path(first.remote_dir, "launched").exists()  # the answer was lost, and nothing started
    second = queueing.request_run(disk, profile)
    assert second.explanation == f"waiting: disk busy with run {first.pk}"

    # The worker's next attempt asks the host, which says it never launched the run: it is launched now.
    first, wrappers = _wait_final_counting_wrappers(first)
    _assert_held_and_reattached(first, second, wrappers)


def test_a_failure_before_the_launch_command_fails_the_run_and_frees_its_disk(
    fio_installed, sshd, tmp_path, monkeypatch
):
    team, host = team_with_host(sshd)
    disk = Disk.objects.create(host=host, label="tmp", target_path=target_dir(tmp_path), disk_type="custom")
    run = _queued(disk, quick_profile(team))

    def put_file(self, path, data, **kwargs):
        raise ssh.SSHError("channel", "the upload broke (injected by the test)")

    monkeypatch.setattr(ssh.Connection, "put_file", put_file)
    assert launching.launch(run.pk) == Run.State.ERROR
    run.refresh_from_db()
    assert run.explanation == "could not start: the upload broke (injected by the test)"
    assert not run.remote_dir
    assert not Run.objects.filter(disk=disk, state__in=Run.ACTIVE_STATES).exists()
    run_dirs = list(Path(host.run_base_dir).glob("*/launched"))
    assert run_dirs == []


def test_an_overtaken_launch_attempt_that_fails_ends_nothing_another_attempt_started(
    fio_installed, sshd, worker, tmp_path, monkeypatch
):
    # The sweep re-sends a launch that waited in the queue, and two attempts overlap. Before attempts were
    # counted, the older one, failing after the newer had launched, ended the running run as *error*: its fio
    # ran on, never collected.
    team, host = team_with_host(sshd)
    disk = Disk.objects.create(host=host, label="tmp", target_path=target_dir(tmp_path), disk_type="custom")
    run = _queued(disk, quick_profile(team, runtime_s=4))
    real_put_file = ssh.Connection.put_file

    def put_file(self, path, data, **kwargs):
        monkeypatch.setattr(ssh.Connection, "put_file", real_put_file)
        assert launching.launch(run.pk) == Run.State.RUNNING  # the newer attempt, meanwhile
        raise ssh.SSHError("channel", "the upload broke (injected by the test)")

    monkeypatch.setattr(ssh.Connection, "put_file", put_file)
    assert launching.launch(run.pk) == Run.State.RUNNING
    run, wrappers = _wait_final_counting_wrappers(run)
    assert run.state == Run.State.SUCCEEDED, run.explanation
    assert run.launch_attempt == 2 and len(wrappers) == 1


def test_an_attempt_overtaken_before_its_launch_command_sends_none(fio_installed, sshd, tmp_path, monkeypatch):
    # A newer attempt began while this one uploaded: the newer one sends the launch, this one nothing.
    team, host = team_with_host(sshd)
    disk = Disk.objects.create(host=host, label="tmp", target_path=target_dir(tmp_path), disk_type="custom")
    run = _queued(disk, quick_profile(team))
    real_put_file = ssh.Connection.put_file

    def put_file(self, path, data, **kwargs):
        Run.objects.filter(pk=run.pk).update(launch_attempt=F("launch_attempt") + 1)
        return real_put_file(self, path, data, **kwargs)

    monkeypatch.setattr(ssh.Connection, "put_file", put_file)
    assert launching.launch(run.pk) == Run.State.LAUNCHING
    run.refresh_from_db()
    assert (run.state, run.remote_dir) == (Run.State.LAUNCHING, "")
    assert list(Path(host.run_base_dir).glob("*/launched")) == [] and not wrappers_of(run)


def test_a_cancelled_run_whose_lost_launch_never_ran_ends_with_its_launch_taken_and_its_files_gone(
    fio_installed, sshd, tmp_path, monkeypatch
):
    team, host = team_with_host(sshd)
    disk = Disk.objects.create(host=host, label="tmp", target_path=target_dir(tmp_path), disk_type="custom")
    run = _queued(disk, quick_profile(team))
    _freeze_after_the_launch_command(monkeypatch, runs_on_host=False)
    assert launching.launch(run.pk) == Run.State.LAUNCHING
    monkeypatch.undo()
    Run.objects.filter(pk=run.pk).update(cancel_requested=True)
    assert launching.launch(run.pk) == Run.State.CANCELLED
    run.refresh_from_db()
    assert run.explanation == "cancelled before it started (the host never started it)"
    assert not Path(run.remote_dir).exists() and not wrappers_of(run)


def test_a_cancelled_run_whose_older_launch_lands_after_the_preflight_is_stopped_not_left_running(
    fio_installed, sshd, worker, tmp_path, monkeypatch
):
    # An attempt sent the launch command and lost its answer; the run was cancelled; the next attempt's
    # preflight found no launch, and the older command landed just after it. Before the launch was taken
    # first, that attempt ended the run "cancelled before it started" and removed its directory while its
    # wrapper ran fio.
    team, host = team_with_host(sshd)
    disk = Disk.objects.create(host=host, label="tmp", target_path=target_dir(tmp_path), disk_type="custom")
    run = _queued(disk, quick_profile(team, runtime_s=4))
    _freeze_after_the_launch_command(monkeypatch, runs_on_host=False)
    assert launching.launch(run.pk) == Run.State.LAUNCHING
    monkeypatch.undo()
    Run.objects.filter(pk=run.pk).update(cancel_requested=True)
    real_preflight = remote.preflight

    def preflight(conn, *args, **kwargs):
        answer = real_preflight(conn, *args, **kwargs)
        assert not answer.launched
        landed = real_run(conn, f"cd {shlex.quote(answer.run_dir)} && {LAUNCH_COMMAND} && "
                                "(setsid sh run.sh </dev/null >wrapper.log 2>&1 &)", timeout=30)  # fmt: skip
        assert landed.exit_status == 0
        return answer

    monkeypatch.setattr(remote, "preflight", preflight)
    assert launching.launch(run.pk) == Run.State.RUNNING  # re-attached, and its stop sent
    monkeypatch.undo()
    run, wrappers = _wait_final_counting_wrappers(run)
    assert (run.state, run.explanation) == (Run.State.CANCELLED, "cancelled: the benchmark was stopped on the host")
    assert len(wrappers) == 1 and not wrappers_of(run)
    assert _gone(run.remote_dir)


def test_a_host_unreachable_after_a_lost_launch_answer_keeps_the_run_until_its_watchdog_bound(
    sshd_factory, broker, tmp_path
):
    server = sshd_factory()
    team, host = team_with_host(server)
    disk = Disk.objects.create(host=host, label="tmp", target_path=target_dir(tmp_path), disk_type="custom")
    run = _queued(disk, quick_profile(team, runtime_s=60))
    # As a lost launch answer leaves it: launching, with its run directory and planned start stored.
    remote_dir = f"{host.run_base_dir}/{run.uuid}"
    Run.objects.filter(pk=run.pk).update(state=Run.State.LAUNCHING, remote_dir=remote_dir, started_at=timezone.now())
    server.handle.stop()

    assert launching.launch(run.pk) == Run.State.LAUNCHING
    run.refresh_from_db()
    assert "launch answer lost; re-attaching by UUID" in run.explanation and "Last error:" in run.explanation
    assert queueing.request_run(disk, quick_profile(team, name="next")).state == Run.State.PENDING

    # Past the host's own watchdog (runtime + grace + timeout's KILL) and the margin, it gives up.
    bound = runners.watchdog_seconds(run.parameters) + launching.WATCHDOG_KILL_S + launching.LOST_LAUNCH_MARGIN.seconds
    Run.objects.filter(pk=run.pk).update(started_at=timezone.now() - timedelta(seconds=bound + 1))
    assert launching.launch(run.pk) == Run.State.LOST
    run.refresh_from_db()
    assert run.explanation.startswith("lost: the launch answer never came back")
    assert remote_dir in run.explanation
    # The disk went to the run waiting for it.
    assert Run.objects.get(disk=disk, profile__name="next").state == Run.State.QUEUED


def test_the_sweep_reattaches_a_lost_launch_whose_chain_died_within_its_bound(
    fio_installed, sshd, worker, tmp_path, monkeypatch
):
    team, host = team_with_host(sshd)
    disk = Disk.objects.create(host=host, label="tmp", target_path=target_dir(tmp_path), disk_type="custom")
    first = _queued(disk, quick_profile(team, runtime_s=4))
    _freeze_after_the_launch_command(monkeypatch)
    # The re-sent launch is lost too (a worker died holding it): only the sweep can pick the run up.
    monkeypatch.setattr(steps, "send", lambda *args, **kwargs: None)
    launching.launch(first.pk)
    monkeypatch.undo()
    first.refresh_from_db()
    assert first.state == Run.State.LAUNCHING
    second = queueing.request_run(disk, quick_profile(team, name="next", runtime_s=4))

    beat = first.heartbeat_at
    assert sweeping.sweep(now=beat + sweeping.STALE_AFTER - timedelta(seconds=1)) == 0
    assert sweeping.sweep(now=beat + sweeping.STALE_AFTER + timedelta(seconds=1)) == 1
    first, wrappers = _wait_final_counting_wrappers(first)
    _assert_held_and_reattached(first, second, wrappers)


def test_a_run_with_no_heartbeat_is_swept_at_once(sshd, broker, tmp_path):
    _team, host = team_with_host(sshd)
    disk = Disk.objects.create(host=host, label="tmp", target_path=target_dir(tmp_path), disk_type="custom")
    run = RunFactory(disk=disk, running=True, heartbeat_at=None, remote_dir=str(tmp_path / "gone"))
    assert sweeping.sweep() == 1
    run.refresh_from_db()
    assert run.heartbeat_at is not None
    assert sweeping.sweep() == 0  # its chain is alive again: not sent twice


def test_the_sweep_moves_a_hosts_stale_running_runs_at_once_and_starts_one_chain_for_them(
    sshd, broker, tmp_path, monkeypatch
):
    _team, host = team_with_host(sshd)
    old = timezone.now() - sweeping.STALE_AFTER - timedelta(seconds=5)
    runs = [
        RunFactory(disk=disk, running=True, heartbeat_at=old, remote_dir=str(tmp_path / f"gone{i}"))
        for i, disk in enumerate(
            Disk.objects.create(host=host, label=f"d{i}", target_path=target_dir(tmp_path), disk_type="custom")
            for i in range(5)
        )
    ]
    watched = Disk.objects.create(host=host, label="watched", target_path=target_dir(tmp_path), disk_type="custom")
    fresh = RunFactory(disk=watched, running=True, heartbeat_at=timezone.now())
    sent: list[tuple] = []
    monkeypatch.setattr(messages, "send", lambda *args, **kwargs: sent.append(args))

    assert sweeping.sweep() == 5
    assert [args[0] for args in sent] == [messages.OBSERVE_HOST]  # one chain for the host's five
    assert all(run.heartbeat_at > old for run in Run.objects.filter(pk__in=[run.pk for run in runs]))
    assert Run.objects.get(pk=fresh.pk).heartbeat_at == fresh.heartbeat_at
    assert sweeping.sweep() == 0 and len(sent) == 1


def test_a_waiting_run_takes_the_disk_when_it_frees_without_a_beat_tick(fio_installed, sshd, worker, tmp_path):
    team, host = team_with_host(sshd)
    disk = Disk.objects.create(host=host, label="tmp", target_path=target_dir(tmp_path), disk_type="custom")
    first = queueing.request_run(disk, quick_profile(team, runtime_s=4))
    second = queueing.request_run(disk, quick_profile(team, name="second", runtime_s=2))
    third = queueing.request_run(disk, quick_profile(team, name="third", runtime_s=2))
    assert second.explanation == third.explanation == f"waiting: disk busy with run {first.pk}"

    first = wait_final(first)
    second.refresh_from_db()
    third.refresh_from_db()
    assert second.state != Run.State.PENDING, second.explanation
    assert third.explanation == f"waiting: disk busy with run {second.pk}", third.explanation
    assert wait_final(second).state == wait_final(third).state == Run.State.SUCCEEDED
    assert second.queued_at >= first.finished_at and third.queued_at >= second.finished_at


def test_a_waiting_run_on_an_exclusive_host_takes_it_when_it_frees_without_a_beat_tick(
    fio_installed, sshd, worker, tmp_path
):
    team, host = team_with_host(sshd, exclusive=True)
    one = Disk.objects.create(host=host, label="one", target_path=target_dir(tmp_path / "1"), disk_type="custom")
    two = Disk.objects.create(host=host, label="two", target_path=target_dir(tmp_path / "2"), disk_type="custom")
    first = queueing.request_run(one, quick_profile(team, runtime_s=3))
    waiting = queueing.request_run(two, quick_profile(team, name="second", runtime_s=2))
    assert waiting.explanation.endswith(f"busy with run {first.pk}")
    first = wait_final(first)
    assert wait_final(waiting).state == Run.State.SUCCEEDED
    assert waiting.queued_at >= first.finished_at


def test_a_session_frozen_by_the_network_after_the_launch_loses_no_run(
    fio_installed, sshd_factory, worker, tmp_path, monkeypatch
):
    """A real frozen session: right before the launch command goes out to the session's shell, iptables
    drops everything the sshd sends, so the command reaches the host and runs, and no answer comes back."""
    if os.geteuid() != 0 or shutil.which("iptables") is None:
        pytest.skip("dropping the sshd's packets needs root and iptables")
    server = sshd_factory()
    team, host = team_with_host(server)
    disk = Disk.objects.create(host=host, label="tmp", target_path=target_dir(tmp_path), disk_type="custom")
    profile = quick_profile(team, runtime_s=8)
    first = _queued(disk, profile)
    rule = ["INPUT", "-p", "tcp", "--sport", str(server.port), "-j", "DROP"]

    real_send = Shell._send

    def run(self, command: str, *args, **kwargs):
        if LAUNCH_COMMAND in command:
            kwargs["timeout"] = 2  # the launch command's own is 30 s; the test need not wait that long
        return real_run(self, command, *args, **kwargs)

    def send(self, text: str, deadline: float):
        if LAUNCH_COMMAND in text:
            subprocess.run(["iptables", "-I", *rule], check=True)
        return real_send(self, text, deadline)

    monkeypatch.setattr(ssh.Connection, "run", run)
    monkeypatch.setattr(Shell, "_send", send)
    try:
        assert launching.launch(first.pk) == Run.State.LAUNCHING
    finally:
        subprocess.run(["iptables", "-D", *rule], check=False)
        monkeypatch.undo()
    first.refresh_from_db()
    assert "launch answer lost" in first.explanation and Path(first.remote_dir, "launched").is_dir()
    second = queueing.request_run(disk, profile)
    assert second.explanation == f"waiting: disk busy with run {first.pk}"

    first, wrappers = _wait_final_counting_wrappers(first)
    _assert_held_and_reattached(first, second, wrappers, runtime_s=8)
