"""A group run by fio's own client/server mode end to end: fio's server on three hosts (each its own test sshd on its
own port), each on a Unix socket in a private directory of its run directory, reached over the worker's session to
its host (OpenSSH's stream-local channel), driven by fio's client on a real Celery worker (issue 32: "a group can use
fio's --server on the members … behind the same safety rules")."""

from __future__ import annotations

import stat
import time
from pathlib import Path

import psutil
import pytest

from jobs.models import Disk, Run, RunSample, RunSet
from jobs.remote import fio_server
from jobs.sets import cancelling, requesting
from tests.builders import owner_client_of, quick_profile, target_dir, wait_final
from tests.factories import HostFactory, TeamFactory

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def _group_disks(sshd, sshd_factory, tmp_path, team):
    disks = []
    for number, server in enumerate([sshd, sshd_factory(), sshd_factory()], 1):
        host = HostFactory.for_sshd(server, team=team, name=f"host-{number}")
        disks.append(Disk.objects.create(host=host, label="tmp", target_path=target_dir(tmp_path / f"host-{number}"),
                                         disk_type="custom"))  # fmt: skip
    return disks


def test_fio_client_drives_servers_on_three_hosts_and_each_member_keeps_its_own_result(
    fio_installed, sshd, sshd_factory, worker, tmp_path
):
    team = TeamFactory(name="bench team")
    disks = _group_disks(sshd, sshd_factory, tmp_path, team)

    run_set = requesting.request_group(disks, quick_profile(team, runtime_s=4), synchronised_by="fio")
    # While it runs, each member's server listens on a socket only the login user can reach, and on no port.
    sockets_seen = _server_sockets_while_running(run_set)
    run_set = wait_final(run_set, timeout=120)

    assert run_set.state == RunSet.State.SUCCEEDED, run_set.explanation
    assert run_set.plan["synchronised_by"] == "fio" and run_set.driven_at is not None
    assert sockets_seen, "no member's server socket was seen while the group ran"
    for path, mode, dir_mode in sockets_seen:
        assert stat.S_ISSOCK(mode) and stat.S_IMODE(dir_mode) == 0o700, (path, oct(dir_mode))
    members = list(run_set.members.order_by("set_index"))
    for member in members:
        assert member.state == Run.State.SUCCEEDED, member.explanation
        assert "--server=sock:" in member.command and "fio's client on the worker sends it" in member.command
        # Its own part of the client's output, as fio printed it, with its own job's name and no client's address.
        assert f'"jobname": "benchweb-{member.uuid}"' in member.raw_output
        assert '"hostname"' not in member.raw_output and '"client_stats"' not in member.raw_output
        assert member.summary["total"]["iops"] > 0
        # Per-second samples from the member's own IOPS log, and its start on its host's clock.
        samples = list(RunSample.objects.filter(run=member).order_by("t_s").values_list("t_s", "read_iops"))
        assert len(samples) >= 3 and all(iops and iops > 0 for _, iops in samples), samples
        assert member.progress["elapsed_from"] == "host"
        assert member.started_at is not None and member.clock_offset.get("probes")
        # The server is stopped and the run directory removed just after the members are stored.
        assert _gone(Path(member.remote_dir)), member.remote_dir
    # Each test file had the run's own name (not the client's address before it) and is gone.
    assert not [f for d in disks for f in Path(d.target_path).iterdir()]
    starts = [m.started_at.timestamp() for m in members]
    assert max(starts) - min(starts) < 2
    result = run_set.result
    assert result["start_spread"]["spread_s"] is not None
    # The group's page says who started it.
    page = owner_client_of(team).get(f"/sets/{run_set.pk}/")
    assert page.status_code == 200
    assert "Started by <strong>fio's client/server mode</strong>" in page.content.decode()
    assert result["totals"]["whole_runs"]["iops"] == pytest.approx(
        sum(m.summary["total"]["iops"] for m in members), rel=1e-4
    )


def _gone(path: Path, timeout: float = 30) -> bool:
    deadline = time.monotonic() + timeout
    while path.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    return not path.exists()


def _server_sockets_while_running(run_set: RunSet, timeout: float = 60) -> list[tuple[str, int, int]]:
    """Every member's server socket (its mode, its directory's mode) once all three are up."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        dirs = [m.remote_dir for m in run_set.members.all() if m.state == Run.State.RUNNING and m.remote_dir]
        paths = [fio_server.socket_path(d) for d in dirs]
        if len(paths) == 3 and all(Path(p).exists() for p in paths):
            return [(p, Path(p).stat().st_mode, Path(p).parent.stat().st_mode) for p in paths]
        run_set.refresh_from_db()
        if run_set.is_final:
            return []
        time.sleep(0.1)
    return []


def test_one_member_refused_at_its_launch_calls_the_others_off_before_any_job_is_sent(
    fio_installed, sshd, sshd_factory, worker, tmp_path
):
    team = TeamFactory(name="bench team")
    disks = _group_disks(sshd, sshd_factory, tmp_path, team)
    # The third host's run directory cannot be made: its launch fails before anything is started there.
    blocked = tmp_path / "not-a-dir"
    blocked.write_text("a file where the run directory would go")
    Disk.objects.get(pk=disks[2].pk).host.__class__.objects.filter(pk=disks[2].host_id).update(
        run_base_dir=str(blocked / "runs")
    )

    run_set = requesting.request_group(disks, quick_profile(team, runtime_s=4), synchronised_by="fio")
    run_set = wait_final(run_set, timeout=120)

    members = list(run_set.members.order_by("set_index"))
    assert members[2].state == Run.State.ERROR and "run directory" in members[2].explanation
    assert [m.state for m in members[:2]] == [Run.State.CANCELLED] * 2, [m.explanation for m in members]
    for member in members[:2]:
        assert member.explanation.startswith("called off before fio's client started, nothing was written: member 3 "
                                              "on host-3:tmp ended error"), member.explanation  # fmt: skip
    assert run_set.state == RunSet.State.FAILED and "called off" in run_set.explanation
    # No member measured anything: no test file was laid out on any host.
    for disk in disks:
        assert not list(Path(disk.target_path).glob("benchweb-*")), disk.target_path
    assert not RunSample.objects.filter(run__in=members).exists()


def test_one_cancel_stops_fios_client_and_every_server_mid_run(fio_installed, sshd, sshd_factory, worker, tmp_path):
    team = TeamFactory(name="bench team")
    disks = _group_disks(sshd, sshd_factory, tmp_path, team)
    run_set = requesting.request_group(disks, quick_profile(team, runtime_s=60), synchronised_by="fio")
    deadline = time.monotonic() + 60
    while not _measuring(run_set):
        assert time.monotonic() < deadline, (
            "the group's fio client never started measuring",
            run_set.driven_at,
            [
                (m.state, m.explanation, m.disk.target_path, list(Path(m.disk.target_path).iterdir()))
                for m in run_set.members.all()
            ],
        )
        time.sleep(0.2)
    dirs = [m.remote_dir for m in run_set.members.all()]

    cancelling.cancel(run_set)
    run_set = wait_final(run_set, timeout=60)

    assert run_set.state == RunSet.State.CANCELLED, run_set.explanation
    assert set(run_set.members.values_list("state", flat=True)) == {Run.State.CANCELLED}
    assert not RunSample.objects.filter(run__set_index__isnull=False, run__run_set=run_set).exists()
    # No fio of this group is left: neither the worker's client nor any member's server.
    assert _no_fio_left(dirs), [p.info["cmdline"] for p in psutil.process_iter(["cmdline"]) if _of(p, dirs)]
    assert all(_gone(Path(d)) for d in dirs)


def _measuring(run_set: RunSet) -> bool:
    """The client is running and every member's server has its job: each member's test file is being read."""
    run_set.refresh_from_db()
    members = list(run_set.members.all())
    return run_set.driven_at is not None and all(list(Path(m.disk.target_path).glob("benchweb-*")) for m in members)


def _of(process: psutil.Process, dirs: list[str]) -> bool:
    cmdline = " ".join(process.info.get("cmdline") or [])
    return "fio" in cmdline and (any(d in cmdline for d in dirs) or "--client=sock:m1.sock" in cmdline)


def _no_fio_left(dirs: list[str], timeout: float = 30) -> bool:
    deadline = time.monotonic() + timeout
    while any(_of(p, dirs) for p in psutil.process_iter(["cmdline"])):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True
