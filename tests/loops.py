"""Loop devices and the real safety probe for tests: a Lab of loop devices on files (root only), the probe
run as the host runs it, and the reports it gives, to edit into the cases a test needs."""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import struct
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from jobs import safety

MiB = 2**20


def probe(target: str | Path, kind: str, *, writes: bool) -> str:
    result = subprocess.run(
        ["sh", "-c", safety.check_script(str(target), kind, writes=writes)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == "", result.stderr
    return result.stdout


def check(target: str | Path, kind: str = "block", *, writes: bool = True, allow_destructive: bool = True, **kw):
    return safety.judge(
        probe(target, kind, writes=writes), kind=kind, writes=writes, allow_destructive=allow_destructive, **kw
    )


def sha256(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as device:
        while chunk := device.read(MiB):
            digest.update(chunk)
    return digest.hexdigest()


def sh(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True)


@functools.cache
def why_no_loop_devices() -> str:
    if os.geteuid() != 0:
        return "attaching loop devices needs root"
    if not shutil.which("losetup"):
        return "losetup is not installed"
    image = Path(f"/tmp/benchweb-loop-probe-{os.getpid()}.img")
    image.write_bytes(b"\0" * MiB)
    try:
        attached = subprocess.run(["losetup", "-f", "--show", str(image)], capture_output=True, text=True, check=False)
        if attached.returncode != 0:
            return f"no loop device can be attached here: {attached.stderr.strip()}"
        subprocess.run(["losetup", "-d", attached.stdout.strip()], check=True)
        return ""
    finally:
        image.unlink()


def require_loop_devices() -> None:
    reason = why_no_loop_devices()
    if reason and os.environ.get("CI") == "true":
        pytest.fail(f"CI must run the device tests: {reason}")
    if reason:
        pytest.skip(reason)


class Lab:
    """Loop devices in a tmp dir, and everything done to them, undone in reverse order at teardown."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.undo: list[list[str]] = []

    def loop(
        self,
        name: str,
        *,
        prepare: Callable[[Path], None] | None = None,
        partitions: bool = False,
        read_only: bool = False,
    ) -> str:
        image = self.tmp_path / f"{name}.img"
        with open(image, "wb") as f:
            f.truncate(16 * MiB)
        if prepare:
            prepare(image)
        flags = ["-P"] if partitions else []
        flags += ["-r"] if read_only else []
        device = sh("losetup", *flags, "-f", "--show", str(image)).stdout.strip()
        self.undo.append(["losetup", "-d", device])
        return device

    def mount(self, source: str, *options: str) -> Path:
        mountpoint = self.tmp_path / f"mnt-{len(self.undo)}"
        mountpoint.mkdir()
        sh("mount", *options, source, str(mountpoint))
        self.undo.append(["umount", str(mountpoint)])
        return mountpoint

    def swapon(self, device: str) -> None:
        sh("swapon", device)
        self.undo.append(["swapoff", device])

    def close(self) -> None:
        for argv in reversed(self.undo):
            subprocess.run(argv, capture_output=True, check=False)


def write_mbr(image: Path) -> None:
    """One Linux partition at 1 MiB; written by hand because neither sfdisk nor parted is installed here."""
    entry = struct.pack("<B3sB3sII", 0, b"\0\0\0", 0x83, b"\0\0\0", 2048, 8192)
    with open(image, "r+b") as f:
        f.seek(446)
        f.write(entry)
        f.seek(510)
        f.write(b"\x55\xaa")


def partitioned_loop(lab: Lab) -> str:
    device = lab.loop("partitioned", prepare=write_mbr, partitions=True)
    name = Path(device).name
    if not Path(f"/sys/class/block/{name}/{name}p1").exists() and shutil.which("partx"):
        # Some kernels are built without the msdos parser; partx adds what libblkid reads instead.
        sh("partx", "-a", device)
    assert Path(f"/sys/class/block/{name}/{name}p1/partition").exists()
    return device


CLEAN_DISK = """benchweb_safety=1
kind=block
writes=yes
target=/dev/sdb
user=bench
realpath=/dev/sdb
symlink=no
type=block
readable=yes
majmin=8:16
sysfs=yes
name=sdb
ro=0
size_sectors=20971520
mountinfo=yes
swaps=yes
lsblk_rc=0
lsblk=sdb disk 8:16
blkid_rc=2
wipefs_rc=0
end=1
"""


BENCH_DIR = """benchweb_safety=1
kind=directory
writes=yes
target=/data/bench
user=bench
realpath=/data/bench
symlink=no
type=directory
writable=yes
statfs=314572 4096
end=1
"""


def edit(report: str, *extra: str, **changes: str | None) -> str:
    """The report with keys replaced or added (None drops them) and extra lines added before the end marker."""
    lines, unused = [], dict(changes)
    for line in report.splitlines():
        key = line.partition("=")[0]
        if key in changes:
            unused.pop(key, None)
            if changes[key] is not None:
                lines.append(f"{key}={changes[key]}")
        elif line == "end=1":
            lines += [f"{key}={value}" for key, value in unused.items() if value is not None]
            lines += [*extra, line]
        else:
            lines.append(line)
    return "\n".join(lines) + "\n"
