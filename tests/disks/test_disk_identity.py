"""Disk identity: a different disk at a registered path is never written (issue 12, finding 2).

The end-to-end tests use real loop devices (root only; they skip with the reason elsewhere), the real sshd,
a real Celery worker and real fio; the judge tests read synthetic probe reports.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.test import Client

from audit.models import AuditEvent
from jobs import safety
from jobs.api.models import ApiToken
from jobs.disks import identity
from jobs.models import Disk, Membership, Run, Team
from jobs.runs import queueing
from tests.builders import quick_profile, team_with_host, wait_final
from tests.loops import BENCH_DIR, CLEAN_DISK, Lab, MiB, edit, probe, sh, sha256

# --- the comparison, on synthetic reports ---------------------------------------------------------------

DISK_A = {
    "kind": "block",
    "wwn": "0x5000c500a1b2c3d4",
    "serial": "ZA1B2C3D",
    "model": "ST4000NM0035",
    "size_bytes": 20971520 * 512,
    "by_id": ["/dev/disk/by-id/ata-ST4000NM0035_ZA1B2C3D", "/dev/disk/by-id/wwn-0x5000c500a1b2c3d4"],
}


def disk_report(*extra: str, **changes: str | None) -> str:
    """CLEAN_DISK as a probe on disk A prints it, with lines changed or added."""
    identity = {
        "id_lsblk": 'WWN="0x5000c500a1b2c3d4" SERIAL="ZA1B2C3D" MODEL="ST4000NM0035" PARTUUID=""',
        "id_size_sectors": "20971520",
    }
    lines = [f"id_by_id={link}" for link in DISK_A["by_id"]]
    return edit(CLEAN_DISK, *lines, *extra, **(identity | changes))


def judge(report: str, recorded: dict | None = DISK_A, *, writes: bool = True, kind: str = "block"):
    return safety.judge(report, kind=kind, writes=writes, allow_destructive=True, recorded_identity=recorded)


def test_the_probe_report_gives_the_identity_lsblk_and_sysfs_name() -> None:
    assert judge(disk_report()).facts["identity"] == DISK_A


def test_the_same_disk_passes_and_no_identity_recorded_is_no_refusal() -> None:
    assert judge(disk_report()).ok
    assert judge(disk_report(), recorded=None).ok
    assert judge(disk_report(), recorded={}).ok


def test_a_different_serial_is_refused_naming_both_identities() -> None:
    report = disk_report(id_lsblk='WWN="0x5000c500a1b2c3d4" SERIAL="ZZ999999" MODEL="ST4000NM0035" PARTUUID=""')
    verdict = judge(report)
    assert not verdict.ok
    reason = verdict.reasons[0]
    assert reason.startswith("/dev/sdb is not the disk registered: registered WWN 0x5000c500a1b2c3d4, serial ZA1B2C3D")
    assert "found WWN 0x5000c500a1b2c3d4, serial ZZ999999" in reason
    assert "(changed: serial)" in reason and "record its identity again on the disk page" in reason
    assert verdict.facts["identity_changes"] == ["serial"]


def test_another_disk_of_the_same_model_and_size_is_refused_by_its_wwn_and_by_id() -> None:
    report = edit(
        CLEAN_DISK,
        "id_by_id=/dev/disk/by-id/wwn-0x5000c500ffffffff",
        id_lsblk='WWN="0x5000c500ffffffff" SERIAL="ZA1B2C3D" MODEL="ST4000NM0035" PARTUUID=""',
        id_size_sectors="20971520",
    )
    assert judge(report).facts["identity_changes"] == ["wwn", "by_id"]


def test_a_fact_missing_on_both_sides_is_no_difference_but_one_seen_only_at_registration_is() -> None:
    bare = edit(CLEAN_DISK, id_size_sectors="20971520")
    assert judge(bare, {"kind": "block", "size_bytes": 20971520 * 512}).ok
    # The registered disk had a serial; the device there now shows none (a loop device, another driver).
    assert judge(bare, {"kind": "block", "serial": "ZA1B2C3D", "size_bytes": 20971520 * 512}).facts[
        "identity_changes"
    ] == ["serial"]


def test_a_model_name_alone_does_not_refuse_but_is_named_with_other_changes() -> None:
    renamed = 'WWN="0x5000c500a1b2c3d4" SERIAL="ZA1B2C3D" MODEL="ST4000NM0035-1V4107" PARTUUID=""'
    assert judge(disk_report(id_lsblk=renamed)).ok
    other = 'WWN="0x5000c500a1b2c3d4" SERIAL="OTHER" MODEL="Samsung SSD" PARTUUID=""'
    assert judge(disk_report(id_lsblk=other)).facts["identity_changes"] == ["serial", "model"]


def test_a_changed_size_is_refused() -> None:
    verdict = judge(disk_report(id_size_sectors="41943040"))
    assert verdict.facts["identity_changes"] == ["size_bytes"]
    assert "10.0 GiB" in verdict.reasons[0] and "20.0 GiB" in verdict.reasons[0]


def test_sysfs_names_the_disk_when_lsblk_does_not() -> None:
    report = edit(
        CLEAN_DISK,
        *[f"id_by_id={link}" for link in DISK_A["by_id"]],
        "id_sysfs_wwid=0x5000c500a1b2c3d4",
        "id_sysfs_serial=ZA1B2C3D   ",
        "id_sysfs_model=ST4000NM0035    ",
        id_size_sectors="20971520",
    )
    assert judge(report).facts["identity"] == DISK_A


def test_a_loop_device_is_known_by_its_backing_file_and_inode() -> None:
    loop = {"kind": "block", "size_bytes": 16 * MiB, "backing_file": "/tmp/a.img", "backing_inode": "12 on 254:0"}
    report = edit(CLEAN_DISK, id_size_sectors="32768", id_backing_file="/tmp/a.img", id_losetup="  12   254:0  ")
    assert judge(report, loop).ok
    # The same name, but another file: removed and created again, then attached.
    verdict = judge(edit(report, id_losetup="13 254:0"), loop)
    assert verdict.facts["identity_changes"] == ["backing_inode"]
    assert "inode 12 on 254:0" in verdict.reasons[0] and "inode 13 on 254:0" in verdict.reasons[0]
    # stat's hexadecimal device number gives the same major:minor as losetup.
    assert judge(edit(report, id_losetup=None, id_backing_stat="12 fe00"), loop).ok


def test_lsblk_escapes_are_read_back() -> None:
    report = disk_report(id_lsblk=r'WWN="" SERIAL="A\x20B\x22C" MODEL="Disk\x20One" PARTUUID=""')
    found = judge(report).facts["identity"]
    assert (found["serial"], found["model"]) == ('A B"C', "Disk One")


def test_a_read_run_on_a_different_disk_runs_with_a_warning() -> None:
    report = disk_report(id_lsblk='WWN="" SERIAL="OTHER" MODEL="" PARTUUID=""')
    verdict = judge(report, writes=False)
    assert verdict.ok and verdict.reasons == []
    assert "This read run measures a different disk" in verdict.warnings[0]


def test_a_directory_on_another_filesystem_gets_a_warning_naming_both_uuids() -> None:
    on = 'UUID="{}" SOURCE="/dev/sdc1" TARGET="/data" FSTYPE="xfs"'
    recorded = judge(edit(BENCH_DIR, id_findmnt=on.format("1111-aaaa")), None, kind="directory").facts["identity"]
    assert recorded == {"kind": "directory", "fs_uuid": "1111-aaaa", "fs_source": "/dev/sdc1", "fs_type": "xfs",
                        "mountpoint": "/data"}  # fmt: skip
    verdict = judge(edit(BENCH_DIR, id_findmnt=on.format("2222-bbbb")), recorded, kind="directory")
    assert verdict.ok
    assert verdict.warnings == [
        "/data/bench is now on another filesystem than when it was registered: registered filesystem UUID "
        "1111-aaaa, xfs /dev/sdc1 on /data; found filesystem UUID 2222-bbbb, xfs /dev/sdc1 on /data (changed: "
        "filesystem UUID). The results may not compare with earlier runs; if the disk was replaced on purpose, "
        "record its identity again on the disk page."
    ]
    assert judge(edit(BENCH_DIR, id_findmnt=on.format("1111-aaaa")), recorded, kind="directory").warnings == []


def test_a_directory_without_a_uuid_is_compared_by_its_filesystem_id_and_tmpfs_zero_says_nothing() -> None:
    recorded = {"kind": "directory", "fsid": "421d7d491545d01c"}
    assert judge(edit(BENCH_DIR, id_fsid="421d7d491545d01c"), recorded, kind="directory").warnings == []
    assert judge(edit(BENCH_DIR, id_fsid="99aa"), recorded, kind="directory").warnings
    assert "fsid" not in judge(edit(BENCH_DIR, id_fsid="0000000000000000"), None, kind="directory").facts["identity"]


# --- the real probe on loop devices ----------------------------------------------------------------------


def identity_of(device: str) -> dict:
    verdict = safety.judge(probe(device, "block", writes=False), kind="block", writes=False, allow_destructive=False)
    return verdict.facts["identity"]


def image(tmp_path: Path, name: str, fill: bytes = b"") -> Path:
    path = tmp_path / name
    with open(path, "wb") as f:
        f.write(fill)
        f.truncate(16 * MiB)
    return path


def attach(device: str, backing: Path) -> None:
    """Attach a file at a given loop device, as a re-attach after a reboot would; losetup -f may race for it."""
    sh("losetup", device, str(backing))


def test_the_real_probe_records_a_loop_devices_backing_file_and_its_inode(lab: Lab, tmp_path: Path) -> None:
    device = lab.loop("a")
    found = identity_of(device)
    backing = (tmp_path / "a.img").stat()
    assert found == {
        "kind": "block",
        "size_bytes": 16 * MiB,
        "backing_file": str(tmp_path / "a.img"),
        "backing_inode": f"{backing.st_ino} on {os.major(backing.st_dev)}:{os.minor(backing.st_dev)}",
    }


def test_a_backing_file_name_with_a_newline_cannot_forge_an_identity_line(lab: Lab, tmp_path: Path) -> None:
    forged = tmp_path / 'x\nid_lsblk=SERIAL="FORGED"\nid_backing_file=forged.img'
    image(tmp_path, forged.name)
    device = sh("losetup", "-f", "--show", str(forged)).stdout.strip()
    lab.undo.append(["losetup", "-d", device])
    found = identity_of(device)
    assert "serial" not in found
    assert found["backing_file"] == str(forged).replace("\n", "?")


def test_another_file_attached_at_the_same_loop_device_is_another_disk(lab: Lab, tmp_path: Path) -> None:
    device = lab.loop("a")
    registered = identity_of(device)
    sh("losetup", "-d", device)
    attach(device, image(tmp_path, "b.img"))
    assert safety.identity_changes(registered, identity_of(device)) == ["backing_file", "backing_inode"]
    sh("losetup", "-d", device)
    attach(device, tmp_path / "a.img")
    assert safety.identity_changes(registered, identity_of(device)) == []


# --- end to end: registration over SSH, a write run refused before its first byte ---------------------


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_different_disk_at_the_registered_path_is_refused_unwritten_and_the_registered_one_still_runs(
    fio_installed, sshd, worker, lab: Lab, tmp_path: Path
) -> None:
    device = lab.loop("a")
    team, host = team_with_host(sshd)
    disk = Disk.objects.create(host=host, label="loop", target_path=device, kind=Disk.Kind.BLOCK,
                               disk_type="custom", allow_destructive=True)  # fmt: skip
    recorded = identity.record_disk_identity(disk)
    disk.refresh_from_db()
    assert disk.identity == recorded and recorded["backing_file"] == str(tmp_path / "a.img")
    assert disk.identity_recorded_at is not None

    # The host "reboots": another file is attached at the same device name.
    sh("losetup", "-d", device)
    other = image(tmp_path, "b.img", os.urandom(16 * MiB))
    attach(device, other)
    before = sha256(device)
    writes = quick_profile(team, rw="randwrite", size_bytes=None)
    run = wait_final(queueing.request_run(disk, writes))
    assert run.state == Run.State.ERROR, run.explanation
    assert run.explanation.startswith(f"refused, nothing was written: {device} is not the disk registered: ")
    assert f"registered backing {tmp_path / 'a.img'}" in run.explanation
    assert f"found backing {other}" in run.explanation
    assert sha256(device) == before == sha256(other)
    refused = AuditEvent.objects.get(action=AuditEvent.Action.DISK_IDENTITY_REFUSED)
    assert refused.details["run"] == run.pk and str(other) in refused.details["found"]

    # The registered disk is back: the same check lets the write run through.
    sh("losetup", "-d", device)
    attach(device, tmp_path / "a.img")
    run = wait_final(queueing.request_run(disk, writes))
    assert run.state == Run.State.SUCCEEDED, run.explanation
    assert run.summary["write"]["iops"] > 0


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_block_disk_never_recorded_is_trusted_on_its_first_write_run_and_audited(
    fio_installed, sshd, worker, lab: Lab, tmp_path: Path
) -> None:
    device = lab.loop("a")
    team, host = team_with_host(sshd)
    disk = Disk.objects.create(host=host, label="loop", target_path=device, kind=Disk.Kind.BLOCK,
                               disk_type="custom", allow_destructive=True)  # fmt: skip
    run = wait_final(queueing.request_run(disk, quick_profile(team, rw="randwrite", size_bytes=None)))
    assert run.state == Run.State.SUCCEEDED, run.explanation
    disk.refresh_from_db()
    assert disk.identity["backing_file"] == str(tmp_path / "a.img")
    event = AuditEvent.objects.get(action=AuditEvent.Action.DISK_IDENTITY_RECORDED)
    assert event.details["how"] == f"first use by run {run.pk}"
    assert str(tmp_path / "a.img") in event.details["identity"]


def mkfs_and_mount(lab: Lab, name: str, mountpoint: Path) -> None:
    device = lab.loop(name)
    sh("mkfs.ext4", "-q", "-F", device)
    sh("mount", device, str(mountpoint))
    lab.undo.append(["umount", str(mountpoint)])


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_directory_disk_on_another_filesystem_runs_with_a_warning_on_its_page_and_in_the_api(
    fio_installed, sshd, worker, lab: Lab, tmp_path: Path
) -> None:
    mountpoint = tmp_path / "data"
    mountpoint.mkdir()
    mkfs_and_mount(lab, "first", mountpoint)
    (mountpoint / "bench").mkdir()
    team, host = team_with_host(sshd)
    disk = Disk.objects.create(host=host, label="data", target_path=str(mountpoint / "bench"), disk_type="custom")
    first = identity.record_disk_identity(disk)
    assert first["fs_uuid"] and first["fs_type"] == "ext4"

    sh("umount", str(mountpoint))
    mkfs_and_mount(lab, "second", mountpoint)
    (mountpoint / "bench").mkdir()
    run = wait_final(queueing.request_run(disk, quick_profile(team, size_bytes=4 * MiB)))
    assert run.state == Run.State.SUCCEEDED, run.explanation
    # The second is the fresh-block warning every directory read without a fill carries (tests/test_precondition*).
    warning, fresh = run.warnings
    assert fresh.startswith("Fresh blocks: the test files were laid out by fio just now")
    assert "is now on another filesystem than when it was registered" in warning
    assert first["fs_uuid"] in warning and warning.count("filesystem UUID") >= 2

    user = User.objects.create_user("runner", password="x-long-password-1")
    Membership.objects.create(user=user, team=team, role="member")
    client = Client()
    client.force_login(user)
    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert "another filesystem" in page and first["fs_uuid"] in page
    _, secret = ApiToken.issue(user, team, "tests")
    api = Client(HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert api.get(f"/api/v1/runs/{run.pk}/").json()["warnings"] == [warning, fresh]
    assert api.get("/api/v1/runs/").json()["results"][0]["warnings"] == [warning, fresh]


# --- registration through the pages and the API ------------------------------------------------------------


def member_clients(team) -> tuple[Client, Client]:
    user = User.objects.create_user("member", password="x-long-password-1")
    Membership.objects.create(user=user, team=team, role="member")
    page = Client()
    page.force_login(user)
    _, secret = ApiToken.issue(user, team, "tests")
    return page, Client(HTTP_AUTHORIZATION=f"Bearer {secret}")


@pytest.mark.django_db(transaction=True)
def test_a_disk_registered_through_the_api_and_the_page_records_its_identity_over_ssh(
    sshd, lab: Lab, tmp_path: Path
) -> None:
    device = lab.loop("a")
    team, host = team_with_host(sshd)
    page, api = member_clients(team)
    body = {"host": host.pk, "label": "loop", "target_path": device, "kind": "block", "disk_type": "custom"}
    response = api.post("/api/v1/disks/", body, content_type="application/json")
    assert response.status_code == 201, response.content
    assert response.json()["identity"]["backing_file"] == str(tmp_path / "a.img")
    assert response.json()["identity_note"] == ""
    disk = Disk.objects.get(pk=response.json()["id"])
    assert disk.identity["backing_file"] == str(tmp_path / "a.img")

    # Replaced on purpose: the page's Record identity and the API action both store the new one.
    sh("losetup", "-d", device)
    attach(device, image(tmp_path, "b.img"))
    assert page.post(f"/disks/{disk.pk}/identity/").status_code == 302
    disk.refresh_from_db()
    assert disk.identity["backing_file"] == str(tmp_path / "b.img")
    detail = page.get(f"/disks/{disk.pk}/").content.decode()
    assert f"backing {tmp_path / 'b.img'}" in detail and "Record identity" in detail
    event = AuditEvent.objects.filter(action=AuditEvent.Action.DISK_IDENTITY_RECORDED).first()
    assert event.details["replaced"] and "a.img" in event.details["replaced"] and "b.img" in event.details["identity"]

    sh("losetup", "-d", device)
    attach(device, tmp_path / "a.img")
    answer = api.post(f"/api/v1/disks/{disk.pk}/identity/")
    assert answer.status_code == 200, answer.content
    assert answer.json()["identity"]["backing_file"] == str(tmp_path / "a.img")


@pytest.mark.django_db
def test_a_disk_whose_host_cannot_be_asked_is_saved_with_a_note_saying_so(host) -> None:
    page, api = member_clients(host.team)
    body = {"host": host.pk, "label": "new", "target_path": "/dev/loop7", "kind": "block", "disk_type": "custom"}
    response = api.post("/api/v1/disks/", body, content_type="application/json")
    assert response.status_code == 201, response.content
    assert response.json()["identity"] == {}
    note = response.json()["identity_note"]
    assert "identity of /dev/loop7 not recorded" in note and "has no approved host key" in note
    assert "Record identity on the disk page" in note
    disk = Disk.objects.get(pk=response.json()["id"])
    answer = api.post(f"/api/v1/disks/{disk.pk}/identity/")
    assert answer.status_code == 409 and "has no approved host key" in answer.json()["detail"]
    detail = page.get(f"/disks/{disk.pk}/").content.decode()
    assert "not recorded yet" in detail and "has no approved host key" in detail


def test_the_probe_reads_identity_only_with_commands_that_cannot_write() -> None:
    script = safety.check_script("/dev/sdb", "block", writes=False)
    identity = script[script.index("# Identity:") : script.index('if [ "$kind" = block ] && [ "$ty" = block ] && [')]
    assert ">" not in identity.replace("2>/dev/null", "")
    assert "losetup -n -l -O BACK-INO,BACK-MAJ:MIN" in identity and "losetup -d" not in identity
    assert subprocess.run(["sh", "-n", "-c", script], check=False).returncode == 0


@pytest.mark.django_db
def test_only_members_of_the_disks_team_may_record_its_identity(disk) -> None:
    outsider = User.objects.create_user("outsider")
    Membership.objects.create(user=outsider, team=Team.objects.create(name="other team"), role="owner")
    _, secret = ApiToken.issue(outsider, outsider.memberships.get().team, "tests")
    assert Client(HTTP_AUTHORIZATION=f"Bearer {secret}").post(f"/api/v1/disks/{disk.pk}/identity/").status_code == 404
    viewer = User.objects.create_user("viewer")
    Membership.objects.create(user=viewer, team=disk.team, role="viewer")
    _, secret = ApiToken.issue(viewer, disk.team, "tests")
    assert Client(HTTP_AUTHORIZATION=f"Bearer {secret}").post(f"/api/v1/disks/{disk.pk}/identity/").status_code == 403
    page = Client()
    page.force_login(viewer)
    assert page.post(f"/disks/{disk.pk}/identity/").status_code == 403
    assert page.get(f"/disks/{disk.pk}/identity/").status_code == 405
    assert not AuditEvent.objects.exists() and Disk.objects.get(pk=disk.pk).identity_note == ""
