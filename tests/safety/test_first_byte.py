"""The last check stands at the first byte (jobs/safety/guard.py): a write run is checked again on the host, under
an exclusive claim of the device, right before the tool opens it; the claim holds until the tool has ended.

Real loop devices (root only; they skip with the reason elsewhere and fail in CI), the real sshd, a real Celery
worker and real fio. A scheduled start a few seconds ahead opens the window a scheduled run has between its claim
(when the verdict is reached) and its start second, in which the tests change the device.
"""

from __future__ import annotations

import hashlib
import html
import os
import shutil
import signal
import subprocess
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from audit.models import AuditEvent
from jobs.api.models import ApiToken
from jobs.disks import identity
from jobs.models import Disk, Membership, Run, RunSet
from jobs.remote import fio_server
from jobs.runs import queueing, states
from jobs.safety import guard
from jobs.sets import requesting
from tests.builders import quick_profile, team_with_host, wait_final, wait_state
from tests.factories import HostFactory
from tests.loops import Lab

MiB = 2**20
# How far ahead the scheduled runs start: time for the claim, the preflight and the launch, then for the test to
# change the device while the wrapper waits.
LEAD_S = 10


def sh(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, check=check, capture_output=True, text=True, timeout=60)


def sha256(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(MiB), b""):
            digest.update(block)
    return digest.hexdigest()


def image(tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    path.write_bytes(os.urandom(16 * MiB))
    return path


def block_disk(sshd, device: str) -> Disk:
    _team, host = team_with_host(sshd)
    disk = Disk.objects.create(host=host, label="loop", target_path=device, kind=Disk.Kind.BLOCK,
                               disk_type="custom", allow_destructive=True)  # fmt: skip
    identity.record_disk_identity(disk)
    disk.refresh_from_db()
    return disk


def scheduled_write(disk: Disk, **fields) -> Run:
    """A write run due LEAD_S from now, claimed and launched at once: its wrapper waits on the host."""
    profile = quick_profile(disk.host.team, rw="randwrite", size_bytes=None, **fields)
    run = queueing.create_run(
        disk, profile, trigger=Run.Trigger.API, not_before=timezone.now() + timedelta(seconds=LEAD_S)
    )
    states.claim(run)
    run = wait_state(run, Run.State.RUNNING, timeout=LEAD_S - 2)
    assert run.started_at > timezone.now(), "the run must still be waiting for its start second"
    return run


def refused_unwritten(run: Run, device: str, before: str) -> Run:
    run = wait_final(run, timeout=LEAD_S + 60)
    assert run.state == Run.State.ERROR, run.explanation
    assert run.explanation.startswith("refused on the host just before the first write, nothing was written: ")
    assert sha256(device) == before
    return run


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_another_image_attached_while_a_scheduled_write_waits_is_refused_at_the_first_byte(
    fio_installed, sshd, worker, lab: Lab, tmp_path: Path
) -> None:
    device = lab.loop("a")
    disk = block_disk(sshd, device)
    run = scheduled_write(disk)
    sh("losetup", "-d", device)
    other = image(tmp_path, "b.img")
    sh("losetup", device, str(other))
    before = sha256(device)
    run = refused_unwritten(run, device, before)
    assert f"found backing {other}" in run.explanation and "backing_file" in run.explanation
    assert sha256(other) == before
    refused = AuditEvent.objects.get(action=AuditEvent.Action.DISK_IDENTITY_REFUSED)
    assert refused.details["run"] == run.pk and str(other) in refused.details["found"]
    # Its page and the API say why.
    page = run_page(run)
    assert page.count(html.escape(run.explanation)) + page.count(run.explanation) >= 2
    assert run.exit_status == guard.REFUSED_STATUS


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_filesystem_made_while_a_scheduled_write_waits_is_refused_and_left_intact(
    fio_installed, sshd, worker, lab: Lab
) -> None:
    device = lab.loop("a")
    disk = block_disk(sshd, device)
    run = scheduled_write(disk)
    sh("mkfs.ext4", "-q", "-F", device)
    before = sha256(device)
    run = refused_unwritten(run, device, before)
    assert "ext4" in run.explanation
    assert sh("e2fsck", "-n", "-f", device, check=False).returncode == 0


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_device_mounted_while_a_scheduled_write_waits_is_refused_as_busy(
    fio_installed, sshd, worker, lab: Lab, tmp_path: Path
) -> None:
    device = lab.loop("a")
    disk = block_disk(sshd, device)
    run = scheduled_write(disk)
    sh("mkfs.ext4", "-q", "-F", device)
    mountpoint = tmp_path / "mnt"
    mountpoint.mkdir()
    sh("mount", "-o", "ro,noload", device, str(mountpoint))
    lab.undo.insert(0, ["umount", str(mountpoint)])
    before = sha256(device)
    run = refused_unwritten(run, device, before)
    assert "the device is in use" in run.explanation and "busy" in run.explanation


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_while_a_write_runs_its_device_can_be_neither_formatted_nor_mounted_and_the_run_succeeds(
    fio_installed, sshd, worker, lab: Lab, tmp_path: Path
) -> None:
    device = lab.loop("a")
    disk = block_disk(sshd, device)
    profile = quick_profile(disk.host.team, rw="randwrite", size_bytes=None, runtime_s=6)
    run = queueing.request_run(disk, profile)
    run_dir = Path(wait_state(run, Run.State.RUNNING).remote_dir)
    deadline = time.monotonic() + 20
    while not (run_dir / "stdout").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert (run_dir / "guard.claim").read_text().startswith("held ")
    made = sh("mkfs.ext4", "-q", "-F", device, check=False)
    assert made.returncode != 0 and "in use" in made.stderr, made.stderr
    mountpoint = tmp_path / "mnt"
    mountpoint.mkdir()
    mounted = sh("mount", device, str(mountpoint), check=False)
    if mounted.returncode == 0:
        sh("umount", str(mountpoint))
    assert mounted.returncode != 0 and "busy" in mounted.stderr, mounted.stderr
    run = wait_final(run)
    assert run.state == Run.State.SUCCEEDED, run.explanation
    assert run.summary["write"]["iops"] > 0
    # The claim ended with the run: the device can be formatted again.
    assert sh("mkfs.ext4", "-q", "-F", device, check=False).returncode == 0


@pytest.mark.parametrize("holder", ["perl", "python3"])
def test_each_holder_claims_the_device_exclusively_until_its_input_closes(lab: Lab, holder: str) -> None:
    device = lab.loop("a")
    script = guard._PERL_HOLDER if holder == "perl" else guard._PYTHON_HOLDER
    argv = ["perl", "-e", script, "--", device] if holder == "perl" else ["python3", "-c", script, device]
    with subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) as held:
        assert held.stdout is not None and held.stdin is not None
        rdev = os.stat(device).st_rdev
        assert held.stdout.readline() == f"held {os.major(rdev)}:{os.minor(rdev)}\n"
        assert sh("mkfs.ext4", "-q", "-F", device, check=False).returncode != 0
        with subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) as second:
            out, _ = second.communicate(timeout=30)
        assert out.startswith("busy ") and second.returncode == 1
        held.stdin.close()
        assert held.wait(timeout=30) == 0
    assert sh("mkfs.ext4", "-q", "-F", device, check=False).returncode == 0


def test_a_refusal_reads_as_what_changed() -> None:
    no_holder, _ = guard.explanation("no-holder\n", "", "", kind="block", allow_destructive=True,
                                     recorded_identity=None)  # fmt: skip
    assert "neither perl nor python3" in no_holder
    busy, _ = guard.explanation("busy: Device or resource busy\n", "", "", kind="block", allow_destructive=True,
                             recorded_identity=None)  # fmt: skip
    assert busy.startswith("the device is in use: it could not be opened exclusively (Device or resource busy)")
    before = "benchweb_safety=1\nkind=block\nwrites=yes\nstatfs=1 2\nblkid_rc=2\nend=1\n"
    after = "benchweb_safety=1\nkind=block\nwrites=yes\nstatfs=3 4\nblkid_rc=0\nblkid=TYPE=ext4\nend=1\n"
    changed, _ = guard.explanation("changed\n", before, after, kind="block", allow_destructive=True,
                                recorded_identity=None)  # fmt: skip
    assert "blkid: TYPE=ext4" not in changed  # key: values, not raw lines
    assert "blkid: (none) -> TYPE=ext4" in changed and "blkid_rc: 2 -> 0" in changed and "statfs" not in changed


def run_page(run: Run) -> str:
    """The run's page and its API record, as a member of its team reads them."""
    user = User.objects.create_user("reader", password="x-long-password-1")
    Membership.objects.create(user=user, team=run.disk.host.team, role="member")
    client = Client()
    client.force_login(user)
    _, secret = ApiToken.issue(user, run.disk.host.team, "tests")
    api = Client(HTTP_AUTHORIZATION=f"Bearer {secret}").get(f"/api/v1/runs/{run.pk}/").json()
    return client.get(f"/runs/{run.pk}/").content.decode() + api["explanation"]


def test_a_host_with_neither_perl_nor_python3_has_its_block_write_refused_before_the_probe(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("sh", "mkfifo", "head", "sed", "grep", "rm", "sleep", "cat"):
        (bin_dir / tool).symlink_to(shutil.which(tool) or f"/bin/{tool}")
    script = guard.before_tool("/dev/loop-that-is-never-opened", "block") + 'printf "%s|%s" "$refused" "$holder"\n'
    done = subprocess.run(["sh", "-c", script], cwd=tmp_path, env={"PATH": str(bin_dir)}, capture_output=True,
                          text=True, timeout=30)  # fmt: skip
    assert done.stdout == "no-holder|"
    assert (tmp_path / "guard.refused").read_text() == "no-holder\n"
    assert not (tmp_path / "guard.seen").exists()  # the probe never ran


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_group_run_by_fio_checks_each_write_again_when_the_clients_job_arrives(
    fio_installed, sshd, sshd_factory, worker, lab: Lab, tmp_path: Path
) -> None:
    """fio's client/server mode: a member's wrapper checks and claims its device when it starts fio's server, but
    the first byte comes only when the group's client sends the job. A filesystem signature written into the claimed
    device in between (dd opens it without O_EXCL, as a partitioner would) is caught by the check fio runs as the
    job's exec_prerun: that member writes nothing; the other member, unchanged, measures."""
    first, second = lab.loop("a"), lab.loop("b")
    changed_disk = block_disk(sshd, first)
    other_sshd = sshd_factory()
    other_host = HostFactory.for_sshd(other_sshd, team=changed_disk.host.team, name="host-2")
    other_disk = Disk.objects.create(host=other_host, label="loop", target_path=second, kind=Disk.Kind.BLOCK,
                                     disk_type="custom", allow_destructive=True)  # fmt: skip
    identity.record_disk_identity(other_disk)
    ext4 = tmp_path / "ext4.img"
    ext4.write_bytes(bytes(16 * MiB))
    sh("mkfs.ext4", "-q", "-F", str(ext4))
    profile = quick_profile(changed_disk.host.team, rw="randwrite", size_bytes=None, runtime_s=4)
    # The second host does not answer for a moment: the first member's server is up, claimed, and waiting.
    other_host_sshd = other_sshd.handle.process
    other_host_sshd.send_signal(signal.SIGSTOP)
    try:
        run_set = requesting.request_group([changed_disk, other_disk], profile, synchronised_by="fio")
        waiting = wait_for_server(run_set, index=0)
        assert (waiting / "guard.claim").read_text().startswith("held ")
        sh("dd", f"if={ext4}", f"of={first}", "bs=1M", "count=2", "conv=notrunc,fsync")
        before = sha256(first)
    finally:
        other_host_sshd.send_signal(signal.SIGCONT)
    run_set = wait_final(run_set, timeout=120)

    refused, measured = run_set.members.order_by("set_index")
    assert refused.state == Run.State.ERROR, refused.explanation
    assert refused.explanation.startswith("refused on the host just before the first write, nothing was written: ")
    assert "ext4" in refused.explanation and refused.exit_status == guard.REFUSED_STATUS
    assert sha256(first) == before
    assert measured.state == Run.State.SUCCEEDED, measured.explanation
    assert measured.summary["write"]["iops"] > 0
    assert run_set.state != RunSet.State.SUCCEEDED


def wait_for_server(run_set: RunSet, *, index: int, timeout: float = 60) -> Path:
    """The run directory of the member whose fio server is listening (its socket made), once it is."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        member = run_set.members.filter(set_index=index).first()
        if member and member.remote_dir and Path(fio_server.socket_path(member.remote_dir)).exists():
            return Path(member.remote_dir)
        time.sleep(0.1)
    raise AssertionError(f"member {index + 1}'s fio server did not start within {timeout:g} s")


def _prerun(folder: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(["sh", fio_server.LAST_CHECK], cwd=folder, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)  # fmt: skip


def test_the_check_at_the_clients_job_runs_once_for_the_jobs_starting_together_and_refuses_them_all(
    tmp_path: Path,
) -> None:
    """fio runs the prerun in each of a job's processes at once: one probes, the others take its answer; a later
    start probes again; a changed report refuses every process, with the refusal where the collection reads it."""
    report = "benchweb_safety=1\nkind=directory\nwrites=yes\nstatfs=1 2\nfs=ext4\nend=1\n"
    (tmp_path / fio_server.LAST_CHECK).write_text(guard.at_first_byte("directory"))
    (tmp_path / "guard.expected").write_text(report)
    (tmp_path / "report").write_text(report.replace("statfs=1 2", "statfs=9 9"))  # free space apart: the same
    # The probe as a script that counts its runs.
    (tmp_path / "guard.sh").write_text("echo x >> probes\nsleep 0.3\ncat report\n")
    started = [_prerun(tmp_path) for _ in range(8)]
    assert [p.wait(timeout=60) for p in started] == [0] * 8, [p.communicate()[0] for p in started]
    assert (tmp_path / "probes").read_text().count("x") == 1
    assert not (tmp_path / "guard.refused").exists() and not (tmp_path / "guard.last.lock").exists()
    time.sleep(2.1)
    (tmp_path / "report").write_text(report.replace("fs=ext4", "fs=xfs"))
    again = [_prerun(tmp_path) for _ in range(4)]
    assert [p.wait(timeout=60) for p in again] == [guard.REFUSED_STATUS] * 4
    assert (tmp_path / "probes").read_text().count("x") == 2
    assert (tmp_path / "guard.refused").read_text() == "changed\n"
    assert "fs=xfs" in (tmp_path / "guard.seen").read_text()
