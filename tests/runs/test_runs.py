"""Runs end to end: a real Celery worker and Redis, a real sshd, real fio on this machine."""

from __future__ import annotations

import shutil
import subprocess
import time
from datetime import timedelta
from pathlib import Path

import psutil
import pytest
from django.utils import timezone

from jobs.models import Disk, Membership, Profile, Run
from jobs.runs import queueing, stopping, sweeping, watching
from tests.builders import quick_profile, target_dir, team_with_host, wait_final, wait_state, wrappers_of
from tests.factories import RunFactory

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def _processes_mentioning(text: str, name: str | None = None) -> list[psutil.Process]:
    """Live processes whose command line mentions text (each with .info holding its name and cmdline)."""
    found = []
    for process in psutil.process_iter(["cmdline", "name", "status"]):
        cmdline = " ".join(process.info["cmdline"] or [])
        if process.info["status"] == psutil.STATUS_ZOMBIE or text not in cmdline:
            continue
        if name is None or process.info["name"] == name:
            found.append(process)
    return found


def test_a_fio_run_over_ssh_lands_with_plausible_numbers_and_leaves_nothing_on_the_target(
    fio_installed, sshd, worker, tmp_path
):
    team, host = team_with_host(sshd)
    target = tmp_path / "bench"
    target.mkdir()
    disk = Disk.objects.create(host=host, label="tmp", target_path=str(target), disk_type="custom", spec_iops=50000)
    run = queueing.request_run(disk, quick_profile(team))
    run = wait_final(run)

    assert run.state == Run.State.SUCCEEDED, run.explanation
    summary = run.summary
    assert summary["tool"] == "fio" and summary["tool_version"].startswith("3.")
    assert summary["read"]["iops"] > 100
    assert summary["write"] is None
    assert summary["total"]["bw_bytes_per_s"] == pytest.approx(summary["read"]["iops"] * 4096, rel=0.01)
    assert run.samples.count() >= 2
    assert '"fio version"' in run.raw_output
    assert "[benchweb-" in run.command and "rw=randread" in run.command
    assert run.limits_snapshot["iops"] == 50000
    assert run.started_at and run.finished_at and run.finished_at > run.started_at
    # Results are stored first, then the target is cleaned: give the clean-up a moment.
    deadline = time.monotonic() + 15
    while Path(run.remote_dir).exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not Path(run.remote_dir).exists()
    assert list(target.iterdir()) == []


def test_a_run_whose_disk_is_busy_waits_and_says_why(fio_installed, sshd, tmp_path):
    team, host = team_with_host(sshd)
    disk = Disk.objects.create(host=host, label="tmp", target_path=target_dir(tmp_path), disk_type="custom")
    busy = RunFactory(disk=disk, running=True)
    run = queueing.request_run(disk, quick_profile(team))
    assert run.state == Run.State.PENDING
    assert run.explanation == f"waiting: disk busy with run {busy.pk}"


def test_a_host_whose_key_changed_is_refused_on_the_run_page(sshd, other_sshd, worker, tmp_path):
    team, host = team_with_host(sshd, port=other_sshd.port)
    disk = Disk.objects.create(host=host, label="tmp", target_path=target_dir(tmp_path), disk_type="custom")
    run = wait_final(queueing.request_run(disk, quick_profile(team)))
    assert run.state == Run.State.ERROR
    assert run.explanation.startswith("could not start")
    assert other_sshd.host_key.fingerprint in run.explanation and sshd.host_key.fingerprint in run.explanation
    assert "Accepted" not in other_sshd.handle.log()


def test_a_missing_target_directory_is_refused_before_anything_is_written(fio_installed, sshd, worker, tmp_path):
    team, host = team_with_host(sshd)
    missing = tmp_path / "not-there"
    disk = Disk.objects.create(host=host, label="tmp", target_path=str(missing), disk_type="custom")
    run = wait_final(queueing.request_run(disk, quick_profile(team, rw="randwrite")))
    assert run.state == Run.State.ERROR
    assert "refused" in run.explanation and str(missing) in run.explanation
    assert not missing.exists()


def test_cancelling_a_run_leaves_no_fio_process_on_the_target(fio_installed, sshd, worker, tmp_path):
    team, host = team_with_host(sshd)
    disk = Disk.objects.create(host=host, label="tmp", target_path=target_dir(tmp_path), disk_type="custom")
    run = queueing.request_run(disk, quick_profile(team, runtime_s=120))
    wait_state(run, Run.State.RUNNING)
    deadline = time.monotonic() + 30
    while not _processes_mentioning(str(run.uuid), "fio"):
        assert time.monotonic() < deadline, "fio never started"
        time.sleep(0.2)

    stopping.cancel(run)
    run = wait_final(run, timeout=60)
    assert run.state == Run.State.CANCELLED
    # fio and its wrapper are gone when the run says cancelled (a loaded machine gets a moment to reap them: 5 s
    # was once too short in a fresh-clone CI with both databases' suites at once); a poll's own short SSH command
    # may still be finishing a little longer.
    deadline = time.monotonic() + 20
    while _benchmark_processes(run) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _benchmark_processes(run) == []
    deadline = time.monotonic() + 30
    while _processes_mentioning(str(run.uuid)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert [p.info["cmdline"] for p in _processes_mentioning(str(run.uuid))] == []
    assert list((tmp_path / "bench").iterdir()) == []


def _benchmark_processes(run: Run) -> list[list[str]]:
    return [
        p.info["cmdline"]
        for p in _processes_mentioning(str(run.uuid))
        if p.info["name"] == "fio" or "run.sh" in (p.info["cmdline"] or [])
    ]


def test_a_worker_killed_mid_run_loses_nothing_and_fio_runs_once(fio_installed, sshd, worker_factory, tmp_path):
    team, host = team_with_host(sshd)
    disk = Disk.objects.create(host=host, label="tmp", target_path=target_dir(tmp_path), disk_type="custom")
    first = worker_factory()
    run = queueing.request_run(disk, quick_profile(team, runtime_s=8))
    wait_state(run, Run.State.RUNNING)
    wrappers = wrappers_of(run)
    first.kill9()

    worker_factory()
    # The sweep finds the run no worker has looked at lately; here time is moved on instead of waited for.
    assert sweeping.sweep(now=timezone.now() + timedelta(minutes=5)) == 1
    deadline = time.monotonic() + 60
    while not run.is_final and time.monotonic() < deadline:
        wrappers |= wrappers_of(run)
        run.refresh_from_db()
        time.sleep(0.2)
    run = wait_final(run)
    assert run.state == Run.State.SUCCEEDED, run.explanation
    assert len(wrappers) == 1, f"wrappers seen: {wrappers}"
    assert run.summary["runtime_s"] == pytest.approx(8, abs=1)


def test_a_run_survives_its_ssh_server_going_away_mid_run(fio_installed, sshd_factory, worker, tmp_path):
    server = sshd_factory()
    team, host = team_with_host(server)
    disk = Disk.objects.create(host=host, label="tmp", target_path=target_dir(tmp_path), disk_type="custom")
    run = queueing.request_run(disk, quick_profile(team, runtime_s=8))
    wait_state(run, Run.State.RUNNING)
    server.handle.stop()
    time.sleep(4)
    run.refresh_from_db()
    assert run.state == Run.State.RUNNING
    restarted = server.handle.restart() if hasattr(server.handle, "restart") else None
    assert restarted is not None, "sshd_local.SshdHandle needs restart()"
    run = wait_final(run)
    assert run.state == Run.State.SUCCEEDED, run.explanation


def test_a_run_on_a_device_holding_a_filesystem_is_refused_and_the_device_is_unchanged(
    fio_installed, sshd, worker, tmp_path
):
    import hashlib
    import os

    if os.geteuid() != 0 or shutil.which("losetup") is None:
        pytest.skip("loop devices need root and losetup")
    image = tmp_path / "disk.img"
    subprocess.run(["truncate", "-s", "32M", str(image)], check=True)
    subprocess.run(["mkfs.ext4", "-q", "-F", str(image)], check=True)
    device = subprocess.run(["losetup", "-f", "--show", str(image)], capture_output=True, text=True, check=True)
    device = device.stdout.strip()
    try:
        before = hashlib.sha256(Path(device).read_bytes()).hexdigest()
        team, host = team_with_host(sshd)
        disk = Disk.objects.create(host=host, label="loop", target_path=device, kind=Disk.Kind.BLOCK,
                                   disk_type="custom", allow_destructive=True)  # fmt: skip
        run = wait_final(queueing.request_run(disk, quick_profile(team, rw="randwrite", size_bytes=None)))
        assert run.state == Run.State.ERROR
        assert "refused" in run.explanation and "ext4" in run.explanation
        assert hashlib.sha256(Path(device).read_bytes()).hexdigest() == before
    finally:
        subprocess.run(["losetup", "-d", device], check=False)


def test_the_run_page_shows_progress_and_the_result(fio_installed, sshd, worker, tmp_path, client):
    from django.contrib.auth.models import User

    team, host = team_with_host(sshd)
    user = User.objects.create_user("runner", password="x-long-password-1")
    Membership.objects.create(user=user, team=team, role="member")
    client.force_login(user)
    disk = Disk.objects.create(host=host, label="tmp", target_path=target_dir(tmp_path), disk_type="custom")
    profile = quick_profile(team)
    response = client.post(f"/disks/{disk.pk}/", {"profile": profile.pk})
    assert response.status_code == 302
    run = Run.objects.get(disk=disk)
    assert response["Location"] == f"/runs/{run.pk}/"
    run = wait_final(run)
    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert "Succeeded" in page and "rw=randread" in page
    assert client.get(f"/runs/{run.pk}/progress.json").json()["final"] is True


def test_an_ndisk64_run_is_judged_by_its_report_not_its_exit_status(sshd, worker, tmp_path):
    """ndisk64 cannot run here (AIX binary): a clearly named stand-in prints the real AIX report and exits 1."""
    standin = Path(__file__).parent.parent / "fixtures" / "ndisk64-standin.sh"
    _team, host = team_with_host(sshd, ndisk64_path=str(standin))
    disk = Disk.objects.create(host=host, label="tmp", target_path=target_dir(tmp_path), disk_type="custom")
    preset = Profile.objects.get(builtin=True, name="ndisk64: 4k random 50/50, 4 processes")
    run = wait_final(queueing.request_run(disk, preset))
    assert run.state == Run.State.SUCCEEDED, run.explanation
    assert run.exit_status == 1
    assert run.summary["tool"] == "ndisk64"
    assert run.summary["total"]["iops"] == pytest.approx(20030.0)
    assert run.summary["total"]["bw_bytes_per_s"] == pytest.approx(80119.94 * 1024)
    assert run.command.startswith(str(standin)) and "-R -r 50 -M 4 -b 4K -s 32M -t 60 -D -f" in run.command
    assert "Random" in run.raw_output


def test_a_missing_tool_says_how_to_install_it(sshd, worker, tmp_path):
    _team, host = team_with_host(sshd)
    disk = Disk.objects.create(host=host, label="tmp", target_path=target_dir(tmp_path), disk_type="custom")
    preset = Profile.objects.get(builtin=True, name="ndisk64: 4k random 50/50, 4 processes")
    run = wait_final(queueing.request_run(disk, preset))
    assert run.state == Run.State.ERROR
    assert "ndisk64 was not found on loopback" in run.explanation and "PATH" in run.explanation
    assert list((tmp_path / "bench").iterdir()) == []


def test_live_iops_follow_the_latest_interval_while_looked_at_and_a_finished_run_reports_its_real_elapsed_time(
    fio_installed, sshd, worker, tmp_path
):
    """The live figure must move with fio's status documents to the end while someone looks at it (a poll that
    waited on the host for the finish used to hold it for 5 s), and stand still while nobody does (read every
    UNWATCHED_PROGRESS_EVERY_S: a fleet nobody watches costs the host and the database little); a finished run's
    elapsed time is its real runtime, not the last poll's (3.5 s for a 10 s run)."""
    team, host = team_with_host(sshd)
    disk = Disk.objects.create(host=host, label="tmp", target_path=target_dir(tmp_path), disk_type="custom")
    # Unthrottled: under a rate cap the live figure holds the cap, and this test reads it moving.
    run = queueing.request_run(disk, quick_profile(team, runtime_s=12, extra_options={}))
    run = wait_state(run, Run.State.RUNNING)
    # Nobody looks: what the run's first look read (fio had barely started) holds for the next 30 s.
    while "expected_s" not in run.progress and not run.is_final:
        run.refresh_from_db()
        time.sleep(0.1)
    first, read_at = run.progress, time.monotonic()
    time.sleep(4.0)
    run.refresh_from_db()
    assert run.state == Run.State.RUNNING and run.progress == first, (first, run.progress)
    # Its page opens (the page and its progress endpoint call this): from the next step the figures move.
    looked_from = (timezone.now() - run.started_at).total_seconds()
    seen: list[tuple[float, float | None]] = []  # (seconds since the run started, live read IOPS)
    while not run.is_final:
        Run.want_progress([run])
        run.refresh_from_db()
        if run.state == Run.State.RUNNING and run.started_at:
            seen.append(((timezone.now() - run.started_at).total_seconds(), run.progress.get("read_iops")))
        time.sleep(0.1)
    assert run.state == Run.State.SUCCEEDED, run.explanation
    assert time.monotonic() - read_at < watching.UNWATCHED_PROGRESS_EVERY_S  # the held figure was not a late read
    changes = [at for (at, iops), (_, before) in zip(seen[1:], seen, strict=False) if iops != before]
    said = f"looked at from {looked_from:.1f} s: the live IOPS changed at {[round(c, 1) for c in changes]} s"
    # fio writes a figure a second and a looked-at run's are read every 2 s (an end within a step's time): from
    # the look on it changes at least every 4.5 s. A poll that waited 5 s for the finish held it for 5 s and more.
    held = max(later - earlier for earlier, later in zip([looked_from, *changes], [*changes, seen[-1][0]], strict=True))
    assert changes and held < 4.5, said
    # The wall clock on the host from the wrapper's start to the tool's end: fio's 12 s plus its start-up.
    assert 12.0 <= run.progress["elapsed_s"] <= 14.0 and run.progress["elapsed_from"] == "host"
    assert run.progress["elapsed_s"] <= (run.finished_at - run.started_at).total_seconds()
    assert run.progress["eta_s"] == 0


def test_looking_at_a_running_run_has_its_live_figures_read_often_and_writes_once_a_half_minute(db, disk, owner_client):
    running = RunFactory(disk=disk, running=True)
    done = RunFactory(disk=disk, succeeded=True)
    # Its page, the progress its page and the overview poll, the API's run and runs list: each marks it looked at.
    for url in (f"/runs/{running.pk}/", f"/runs/{running.pk}/progress.json", f"/api/v1/runs/{running.pk}/",
                "/api/v1/runs/"):  # fmt: skip
        Run.objects.filter(pk=running.pk).update(progress_wanted_until=None)
        before = timezone.now()
        assert owner_client.get(url).status_code == 200, url
        running.refresh_from_db()
        assert running.progress_wanted_until is not None, url
        assert before + timedelta(seconds=59) <= running.progress_wanted_until <= timezone.now() + timedelta(seconds=60)
        assert running.progress_wanted(timezone.now()) and not running.progress_wanted(
            timezone.now() + timedelta(minutes=2)
        )
    # A page polling every 2 s writes again only once half the minute has passed.
    marked = running.progress_wanted_until
    Run.want_progress([running], now=marked - timedelta(seconds=40))
    running.refresh_from_db()
    assert running.progress_wanted_until == marked
    Run.want_progress([running], now=marked - timedelta(seconds=20))
    running.refresh_from_db()
    assert running.progress_wanted_until == marked + timedelta(seconds=40)
    # A finished run's page writes nothing.
    assert owner_client.get(f"/runs/{done.pk}/").status_code == 200
    done.refresh_from_db()
    assert done.progress_wanted_until is None
