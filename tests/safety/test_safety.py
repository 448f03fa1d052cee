from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from jobs import safety
from tests.loops import (
    BENCH_DIR,
    CLEAN_DISK,
    Lab,
    MiB,
    check,
    edit,
    partitioned_loop,
    sh,
    sha256,
)

# --- running the real probe ---------------------------------------------------------------------------


# --- block devices, for real --------------------------------------------------------------------------


def test_a_blank_device_with_allow_destructive_may_be_written(lab: Lab) -> None:
    device = lab.loop("blank")
    before = sha256(device)

    verdict = check(device, allow_destructive=True)

    assert verdict.ok, verdict.reasons
    assert verdict.facts["device"] == device
    assert verdict.facts["size_bytes"] == 16 * MiB
    assert verdict.facts["signatures"] == [] and verdict.facts["partitions"] == []
    assert sha256(device) == before


def test_writes_to_a_blank_device_without_allow_destructive_are_refused(lab: Lab) -> None:
    verdict = check(lab.loop("blank"), allow_destructive=False)

    assert len(verdict.reasons) == 1
    assert verdict.reasons[0].startswith("writes to a block device need 'allow destructive' on the disk")


def test_a_read_profile_on_a_device_needs_no_allow_destructive(lab: Lab) -> None:
    device = lab.loop("blank")

    verdict = check(device, writes=False, allow_destructive=False)

    assert verdict.ok, verdict.reasons
    assert verdict.facts["device"] == device


def test_a_read_profile_on_a_mounted_device_is_allowed_because_fio_runs_it_readonly(lab: Lab) -> None:
    device = lab.loop("ext4")
    sh("mkfs.ext4", "-q", device)
    lab.mount(device)

    assert check(device, writes=False, allow_destructive=False).ok


def test_a_device_holding_ext4_is_refused_and_left_byte_for_byte_unchanged(lab: Lab) -> None:
    device = lab.loop("ext4")
    sh("mkfs.ext4", "-q", device)
    before = sha256(device)

    verdict = check(device)

    assert not verdict.ok
    assert verdict.reasons == [
        f"{device} holds an ext4 filesystem (blkid, wipefs); benchweb never writes to a device with a filesystem. "
        "Wipe it yourself if you really mean it, or choose another device."
    ]
    assert sha256(device) == before


def test_a_partitioned_device_is_refused_naming_its_partitions(lab: Lab) -> None:
    device = partitioned_loop(lab)
    partition = f"{Path(device).name}p1"

    verdict = check(device)

    assert not verdict.ok
    assert verdict.facts["partitions"] == [partition]
    assert f"{device} has partitions ({partition}); benchweb never writes to a partitioned device." in " ".join(
        verdict.reasons
    )
    assert any("holds a dos partition table" in reason for reason in verdict.reasons)


def test_a_device_whose_partition_is_mounted_is_refused_which_fio_would_miss(lab: Lab) -> None:
    device = partitioned_loop(lab)
    partition = f"{device}p1"
    sh("mkfs.ext4", "-q", partition)
    mountpoint = lab.mount(partition)

    verdict = check(device)

    assert not verdict.ok
    assert (
        f"partition {Path(partition).name} of {device} is mounted at {mountpoint}; "
        "benchweb never writes to a mounted device." in " ".join(verdict.reasons)
    )


def test_a_device_with_a_swap_signature_is_refused(lab: Lab) -> None:
    device = lab.loop("swap")
    sh("mkswap", device)

    verdict = check(device)

    assert not verdict.ok
    assert any(reason.startswith(f"{device} holds a swap signature (blkid, wipefs)") for reason in verdict.reasons)


def test_a_device_in_use_as_swap_is_refused_naming_proc_swaps(lab: Lab) -> None:
    device = lab.loop("swap")
    sh("mkswap", device)
    lab.swapon(device)

    verdict = check(device)

    assert not verdict.ok
    assert f"{device} is in use as swap (/proc/swaps); benchweb never writes to active swap." in " ".join(
        verdict.reasons
    )


def test_a_mounted_device_is_refused_naming_the_mountpoint(lab: Lab) -> None:
    device = lab.loop("ext4")
    sh("mkfs.ext4", "-q", device)
    mountpoint = lab.mount(device)

    verdict = check(device)

    assert not verdict.ok
    assert f"{device} is mounted at {mountpoint}; benchweb never writes to a mounted device." in " ".join(
        verdict.reasons
    )
    assert verdict.facts["mounts"] == [{"device": Path(device).name, "mountpoint": str(mountpoint)}]


def test_a_device_held_by_device_mapper_is_refused_naming_the_holder(lab: Lab) -> None:
    device = lab.loop("held")
    dm_name = f"benchweb-test-{os.getpid()}"
    if not shutil.which("dmsetup"):
        pytest.skip("dmsetup is not installed, so no device-mapper holder can be made")
    table = f"0 {16 * MiB // 512} linear {device} 0"
    created = subprocess.run(["dmsetup", "create", dm_name, "--table", table], capture_output=True, text=True)
    if created.returncode != 0:
        pytest.skip(f"device-mapper is not usable in this kernel: {created.stderr.strip().splitlines()[0]}")
    lab.undo.append(["dmsetup", "remove", dm_name])

    verdict = check(device)

    assert not verdict.ok
    holder = " ".join(verdict.reasons)
    assert f"{device} is held by dm-" in holder and f"({dm_name})" in holder


def test_a_read_only_device_refuses_writes(lab: Lab) -> None:
    device = lab.loop("ro", read_only=True)

    verdict = check(device)

    assert verdict.reasons == [
        f"{device} is read-only (/sys/class/block/{Path(device).name}/ro is 1), so a write profile cannot run on "
        "it; run a read profile or make the device writable."
    ]


def test_a_device_the_ssh_user_cannot_read_is_refused_although_blkid_exits_as_if_it_were_blank(lab: Lab) -> None:
    device = lab.loop("blank")
    if not shutil.which("setpriv"):
        pytest.skip("setpriv is not installed, so the probe cannot run as an unprivileged user")
    script = safety.check_script(device, "block", writes=True)
    as_nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "sh", "-c", script]
    report = subprocess.run(as_nobody, capture_output=True, text=True, timeout=60, check=True, cwd="/").stdout

    verdict = safety.judge(report, kind="block", writes=True, allow_destructive=True)

    assert "blkid_rc=2" in report.splitlines()
    assert verdict.reasons[0].startswith(f"cannot verify {device}: ")
    assert "cannot read it, so its signatures cannot be probed" in verdict.reasons[0]
    assert "blkid failed on the host (exit 2: " in verdict.reasons[1]
    assert verdict.reasons[1].endswith(f"{device}: Permission denied). {safety.CANNOT_CHECK}")


def test_a_symlink_to_a_device_is_resolved_and_judged_as_the_device(lab: Lab) -> None:
    blank, ext4 = lab.loop("blank"), lab.loop("ext4")
    sh("mkfs.ext4", "-q", ext4)
    (lab.tmp_path / "by-id-blank").symlink_to(blank)
    (lab.tmp_path / "by-id-ext4").symlink_to(ext4)

    to_blank = check(lab.tmp_path / "by-id-blank")
    to_ext4 = check(lab.tmp_path / "by-id-ext4")

    assert to_blank.ok and to_blank.facts["device"] == blank and to_blank.facts["symlink"]
    assert not to_ext4.ok
    assert to_ext4.reasons[0].startswith(f"{lab.tmp_path}/by-id-ext4 ({ext4}) holds an ext4 filesystem")


def test_a_regular_file_given_as_a_block_device_is_refused(tmp_path: Path) -> None:
    regular = tmp_path / "disk.img"
    regular.write_bytes(b"\0" * 4096)

    verdict = check(regular)

    assert verdict.reasons == [
        f"{regular} is a regular file on the host, not a block device: fix the disk's target path, or set the "
        "disk's kind to directory if you mean a directory to put test files in."
    ]
    assert regular.read_bytes() == b"\0" * 4096


def test_a_missing_device_is_refused(tmp_path: Path) -> None:
    verdict = check(tmp_path / "nvme9n9", writes=False)

    assert verdict.reasons == [
        f"{tmp_path}/nvme9n9 does not exist on the host: check the device name (lsblk on the host lists them) "
        "or fix the disk's target path."
    ]


def test_a_broken_symlink_is_refused_naming_where_it_points(tmp_path: Path) -> None:
    (tmp_path / "by-id").symlink_to("/dev/benchweb-gone")

    verdict = check(tmp_path / "by-id")

    assert "(a symlink to /dev/benchweb-gone, which does not exist)" in verdict.reasons[0]


# --- directories, for real ----------------------------------------------------------------------------


def test_an_existing_writable_directory_with_room_is_accepted_and_left_untouched(tmp_path: Path) -> None:
    (tmp_path / "keep").write_text("data")

    verdict = check(tmp_path, "directory", needed_bytes=MiB)

    assert verdict.ok, verdict.reasons
    assert verdict.facts["writable"] and verdict.facts["free_bytes"] > MiB
    assert [p.name for p in tmp_path.iterdir()] == ["keep"]


def test_a_missing_directory_is_refused_with_the_command_that_creates_it(tmp_path: Path) -> None:
    verdict = check(tmp_path / "bench", "directory")

    assert verdict.reasons == [
        f"{tmp_path}/bench does not exist on the host: create it (mkdir -p {tmp_path}/bench) "
        "or fix the disk's target path."
    ]


def test_a_file_given_as_a_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "bench").write_text("")

    verdict = check(tmp_path / "bench", "directory")

    assert verdict.reasons[0].startswith(f"{tmp_path}/bench is a regular file on the host, not a directory")


def test_a_read_only_directory_is_refused(lab: Lab) -> None:
    target = lab.tmp_path / "bench"
    target.mkdir()
    mountpoint = lab.mount(str(target), "--bind")
    sh("mount", "-o", "remount,bind,ro", str(mountpoint))

    verdict = check(mountpoint, "directory")

    assert verdict.reasons == [
        f"{mountpoint} is not writable for root on the host (permissions, a read-only mount or an "
        "immutable flag); make it writable or choose another directory."
    ]


def test_a_directory_without_room_for_the_test_file_is_refused(tmp_path: Path) -> None:
    verdict = check(tmp_path, "directory", needed_bytes=2**60)

    assert len(verdict.reasons) == 1
    assert verdict.reasons[0].startswith("not enough free space: 1048576.0 TiB needed, ")
    assert verdict.reasons[0].endswith(f" free in {tmp_path}; free some space or lower the profile's size.")


# --- quoting ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["directory", "block"])
def test_a_hostile_target_path_runs_nothing(tmp_path: Path, kind: str) -> None:
    marker, victim = tmp_path / "pwned", tmp_path / "victim"
    victim.mkdir()
    hostile = f"{tmp_path}/x$(touch {marker}); rm -rf {victim}; `touch {marker}` '\"; touch {marker}"

    verdict = check(hostile, kind)

    assert not marker.exists()
    assert victim.is_dir()
    assert verdict.reasons[0].startswith(f"{hostile} does not exist on the host")


def test_a_target_path_with_a_newline_cannot_forge_report_lines(tmp_path: Path) -> None:
    verdict = check(f"{tmp_path}/x\ntype=directory\nwritable=yes", "directory")

    assert not verdict.ok
    assert verdict.reasons == [
        f"the target path '{tmp_path}/x\\ntype=directory\\nwritable=yes' contains a control character; "
        "fix the disk's target path."
    ]


@pytest.mark.parametrize(
    ("separator", "why"),
    [
        ("\x85", "contains a control character"),
        ("\u2028", "contains a Unicode line separator"),
        ("\u2029", "contains a Unicode line separator"),
    ],
)
def test_a_target_path_with_a_unicode_line_break_is_refused(tmp_path: Path, separator: str, why: str) -> None:
    target = separator.join([f"{tmp_path}/x", "type=directory", "writable=yes", "statfs=99999999 4096"])

    verdict = check(target, "directory", needed_bytes=1)

    assert not verdict.ok
    escaped = target.encode("unicode_escape").decode("ascii")
    assert verdict.reasons == [f"the target path '{escaped}' {why}; fix the disk's target path."]


def test_a_symlink_to_a_name_with_unicode_line_separators_cannot_forge_report_lines(tmp_path: Path) -> None:
    forged = "\u2028".join(["gone", "type=directory", "writable=yes", "statfs=99999999 4096"])
    (tmp_path / "link").symlink_to(tmp_path / forged)

    verdict = check(tmp_path / "link", "directory", needed_bytes=1)

    assert not verdict.ok
    assert verdict.facts["type"] == "missing"
    assert verdict.reasons[0].startswith(f"{tmp_path}/link does not exist on the host")


def test_only_a_newline_ends_a_report_line() -> None:
    report = "benchweb_safety=1\nlink=a\x85b=1\u2028c=2\u2029d=3\r\ntype=missing\nend=1\n"

    assert safety.parse_report(report) == ({"link": ["a\x85b=1\u2028c=2\u2029d=3\r"], "type": ["missing"]}, True)


def test_a_relative_target_path_is_refused() -> None:
    assert check("data/bench", "directory").reasons == [
        "the target path 'data/bench' is not absolute; fix the disk's target path."
    ]


def test_the_probe_sends_output_nowhere_but_dev_null_and_never_lets_wipefs_act() -> None:
    script = safety.check_script("/dev/sdb", "block", writes=True)

    # The only other ">" is the "->" that sed strips from ls -l output.
    assert ">" not in re.sub(r"2>&1|2?>/dev/null", "", script.replace("'s/.* -> //'", ""))
    wipefs_calls = [line for line in script.splitlines() if re.search(r"\bwipefs -", line)]
    assert len(wipefs_calls) == 2 and all("wipefs --no-act " in line for line in wipefs_calls)
    assert not re.search(r"\b(dd|tee|mkfs|sfdisk|parted|blkdiscard|truncate)\b", script)


def test_the_script_refuses_an_unknown_kind() -> None:
    with pytest.raises(ValueError, match="kind must be one of"):
        safety.check_script("/dev/sdb", "file", writes=True)


# --- judge on synthetic reports -----------------------------------------------------------------------


def judge_disk(report: str, *, writes: bool = True, allow_destructive: bool = True, **kw) -> safety.Verdict:
    return safety.judge(report, kind="block", writes=writes, allow_destructive=allow_destructive, **kw)


def reasons_of(report: str, **kw) -> str:
    return " ".join(judge_disk(report, **kw).reasons)


def test_a_clean_disk_report_is_accepted_for_writes() -> None:
    verdict = judge_disk(CLEAN_DISK, needed_bytes=10 * 2**30)

    assert verdict.ok, verdict.reasons
    assert verdict.facts["size_bytes"] == 10 * 2**30


def test_a_login_banner_before_the_report_is_ignored() -> None:
    assert judge_disk("Welcome to prod-db-01\nlast login: today\n" + CLEAN_DISK).ok


def test_a_report_cut_off_before_its_end_marker_is_refused() -> None:
    truncated = CLEAN_DISK.replace("end=1\n", "")

    assert judge_disk(truncated).reasons == [
        "the safety check on the host did not finish, so nothing was written; check that the host runs a POSIX "
        "sh and that the SSH connection stays up, then try again."
    ]
    assert not judge_disk("").ok


def test_a_report_made_for_a_read_run_cannot_approve_writes() -> None:
    assert "made for a block target with writes=no, not for this write run" in reasons_of(edit(CLEAN_DISK, writes="no"))
    assert not safety.judge(CLEAN_DISK, kind="directory", writes=True, allow_destructive=True).ok


def test_writes_without_allow_destructive_are_refused_even_on_a_clean_disk() -> None:
    assert judge_disk(CLEAN_DISK, allow_destructive=False).reasons == [
        "writes to a block device need 'allow destructive' on the disk; a write profile overwrites everything on "
        "/dev/sdb. Tick it on the disk only if that is what you want, or run a read profile."
    ]


def test_every_missing_tool_makes_a_device_unverifiable() -> None:
    report = edit(CLEAN_DISK, "missing_tool=blkid", "missing_tool=wipefs", lsblk_rc=None, blkid_rc=None, wipefs_rc=None)

    assert judge_disk(report).reasons == [
        "cannot verify /dev/sdb: blkid, wipefs are missing on the host (util-linux provides them); benchweb "
        "refuses to write to a device it cannot check."
    ]
    assert "lsblk is missing" in reasons_of(edit(CLEAN_DISK, "missing_tool=lsblk", lsblk_rc=None, lsblk=None))


def test_a_device_the_user_cannot_read_is_unverifiable() -> None:
    report = edit(CLEAN_DISK, "blkid=error: /dev/sdb: Permission denied", readable="no")

    reasons = judge_disk(report).reasons
    assert reasons[0].startswith("cannot verify /dev/sdb: bench cannot read it, so its signatures cannot be probed")
    assert reasons[1] == (
        "cannot verify /dev/sdb: blkid failed on the host (exit 2: error: /dev/sdb: Permission denied). "
        "benchweb refuses to write to a device it cannot check."
    )


def test_a_host_without_sysfs_or_mountinfo_is_unverifiable() -> None:
    reasons = judge_disk(edit(CLEAN_DISK, sysfs="no", name=None, mountinfo="no")).reasons

    assert reasons[0].startswith(
        "cannot verify /dev/sdb: the host has no /sys/dev/block entry for it (major:minor 8:16)"
    )
    assert reasons[1].startswith("cannot verify /dev/sdb: /proc/self/mountinfo is not readable on the host")


def test_a_failing_probe_is_refused_with_its_exit_status_and_message() -> None:
    report = edit(CLEAN_DISK, "wipefs=wipefs: error: /dev/sdb: probing initialization failed", wipefs_rc="1")

    assert reasons_of(report) == (
        "cannot verify /dev/sdb: wipefs failed on the host (exit 1: wipefs: error: /dev/sdb: probing initialization "
        "failed). benchweb refuses to write to a device it cannot check."
    )


def test_several_conflicting_signatures_are_refused() -> None:
    assert reasons_of(edit(CLEAN_DISK, blkid_rc="8")).startswith(
        "/dev/sdb holds several conflicting signatures (blkid -p exit 8)"
    )


@pytest.mark.parametrize(
    ("lines", "words"),
    [
        (["blkid=TYPE=LVM2_member", "blkid=USAGE=raid"], "an LVM physical volume (LVM2_member) (blkid)"),
        (["blkid=TYPE=linux_raid_member", "blkid=USAGE=raid"], "a RAID member signature (linux_raid_member)"),
        (["blkid=TYPE=crypto_LUKS", "blkid=USAGE=crypto"], "an encrypted volume (crypto_LUKS) (blkid)"),
        (["blkid=TYPE=zfs_member", "blkid=USAGE=filesystem"], "a zfs_member filesystem (blkid)"),
        (["wipefs=xfs   0x0"], "an xfs filesystem (wipefs)"),
        (["wipefs=gpt   0x200", "wipefs=PMBR  0x1fe"], "a gpt partition table (wipefs)"),
        (["wipefs_p=# offset,uuid,label,type", "wipefs_p=0x438,1234,,ext4"], "an ext4 filesystem (wipefs)"),
        (["wipefs=bcache 0x1018"], "a bcache signature (wipefs)"),
    ],
)
def test_each_kind_of_signature_is_named(lines: list[str], words: str) -> None:
    report = edit(CLEAN_DISK, *lines, blkid_rc="0" if lines[0].startswith("blkid") else "2")

    assert f"/dev/sdb holds {words}" in reasons_of(report)


def test_holders_are_named_with_their_device_mapper_names_wherever_they_sit() -> None:
    report = edit(
        CLEAN_DISK,
        "partition=sdb1 8:17",
        "holder=sdb md0",
        "holder=sdb1 dm-3 vg0-data",
        "lsblk=sdb1 part 8:17 ",
        "lsblk=dm-3 lvm 253:3 ",
        "lsblk=bcache0 disk 252:0 ",
    )

    verdict = judge_disk(report)

    assert verdict.facts["holders"] == ["md0", "dm-3 (vg0-data) on sdb1", "bcache0 (disk, lsblk)"]
    assert (
        "/dev/sdb is held by md0, dm-3 (vg0-data) on sdb1, bcache0 (disk, lsblk) (/sys/class/block/*/holders): it is "
        "part of an LVM volume, an md array or another device-mapper device" in " ".join(verdict.reasons)
    )


def test_mounts_seen_only_by_source_or_only_by_lsblk_are_refused_with_unescaped_mountpoints() -> None:
    report = edit(
        CLEAN_DISK,
        "partition=sdb1 8:17",
        "partition=sdb2 8:18",
        r"mount=8:17 /dev/sdb1 /srv/my\040data",
        r"lsblk=sdb2 part 8:18 /var/lib/docker\x20x",
    )

    verdict = judge_disk(report)

    assert "partition sdb1 of /dev/sdb is mounted at /srv/my data;" in " ".join(verdict.reasons)
    assert "partition sdb2 of /dev/sdb is mounted at /var/lib/docker x;" in " ".join(verdict.reasons)


def test_a_mounted_holder_seen_by_lsblk_is_named_as_built_on_the_device() -> None:
    report = edit(CLEAN_DISK, "holder=sdb dm-0 vg0-data", "lsblk=dm-0 lvm 253:0 /srv/data")

    assert "dm-0, which is built on /dev/sdb, is mounted at /srv/data;" in reasons_of(report)


def test_active_swap_seen_by_proc_swaps_or_lsblk_is_refused() -> None:
    by_proc = edit(CLEAN_DISK, "swap=8:16 /dev/sdb")
    by_lsblk = edit(CLEAN_DISK, "partition=sdb1 8:17", "lsblk=sdb1 part 8:17 [SWAP]")

    assert "/dev/sdb is in use as swap (/proc/swaps)" in reasons_of(by_proc)
    assert "partition sdb1 of /dev/sdb is in use as swap" in reasons_of(by_lsblk)


def test_a_device_too_small_for_the_profile_is_refused() -> None:
    assert reasons_of(CLEAN_DISK, needed_bytes=20 * 2**30) == (
        "/dev/sdb is too small: 20.0 GiB needed, 10.0 GiB on the device; lower the profile's size or choose a "
        "bigger device."
    )


def test_a_character_device_given_as_a_block_device_is_refused() -> None:
    report = edit(CLEAN_DISK, type="character", target="/dev/rhdisk2", realpath="/dev/rhdisk2")

    assert (
        judge_disk(report, writes=False)
        .reasons[0]
        .startswith("/dev/rhdisk2 is a character device on the host, not a block device")
    )


def test_a_writable_directory_with_room_is_accepted() -> None:
    verdict = safety.judge(BENCH_DIR, kind="directory", writes=True, allow_destructive=False, needed_bytes=2**30)

    assert verdict.ok
    assert verdict.facts["free_bytes"] == 314572 * 4096


def test_a_directory_without_enough_space_is_refused_with_both_sizes() -> None:
    report = edit(BENCH_DIR, statfs=f"{int(1.2 * 2**30) // 4096} 4096")

    verdict = safety.judge(report, kind="directory", writes=True, allow_destructive=False, needed_bytes=4 * 2**30)

    assert verdict.reasons == [
        "not enough free space: 4.0 GiB needed, 1.2 GiB free in /data/bench; free some space or lower the "
        "profile's size."
    ]


def test_free_space_falls_back_to_df_and_unknown_space_is_refused() -> None:
    by_df = edit(BENCH_DIR, statfs=None, df="/dev/vdb 41152736 1000 2048 1% /data")
    unknown = edit(BENCH_DIR, "missing_tool=df", statfs=None)

    assert safety.judge(by_df, kind="directory", writes=True, allow_destructive=False).facts["free_bytes"] == 2**21
    assert safety.judge(unknown, kind="directory", writes=True, allow_destructive=False, needed_bytes=1).reasons == [
        "could not read the free space in /data/bench (neither stat -f nor df -Pk answered); benchweb does not "
        "fill a filesystem it cannot measure."
    ]


def test_a_directory_that_is_not_writable_is_refused_even_for_a_read_profile() -> None:
    report = edit(BENCH_DIR, writable="no", writes="no")

    assert safety.judge(report, kind="directory", writes=False, allow_destructive=True).reasons == [
        "/data/bench is not writable for bench on the host (permissions, a read-only mount or an immutable flag); "
        "make it writable or choose another directory."
    ]


# --- test files ---------------------------------------------------------------------------------------

RUN_UUID = "0b6f2f7e-4a0c-4d1e-9a37-5c1d2e3f4a5b"


def test_the_test_file_name_is_benchweb_owned_and_normalised() -> None:
    assert safety.test_file_name(RUN_UUID.upper()) == f"benchweb-{RUN_UUID}"
    with pytest.raises(ValueError):
        safety.test_file_name("../../etc/passwd")


@pytest.mark.parametrize(
    ("name", "owned"),
    [
        (f"benchweb-{RUN_UUID}", True),
        (f"benchweb-{RUN_UUID}.0.0", True),
        (f"benchweb-{RUN_UUID}.3.12", True),
        (f"benchweb-{RUN_UUID}.0.0.tmp", False),
        (f"benchweb-{RUN_UUID}/../x", False),
        ("benchweb-notauuid", False),
        ("database.ibd", False),
        (f"x-benchweb-{RUN_UUID}", False),
    ],
)
def test_only_names_benchweb_made_count_as_its_own(name: str, owned: bool) -> None:
    assert safety.is_owned_test_file(name) is owned
