"""The real environment probe (probe.sh, run with sh as the host runs it) reading the device chain under a target.

On this machine's loop devices (root; the `lab` fixture): a loop device alone, a partition of one (its whole disk
below it), and a directory on a filesystem mounted from that partition.

This kernel has neither device-mapper nor md (no /sys/module/dm_mod, no /proc/mdstat; `dmsetup create` fails),
so LVM, md and their stacks are read from a sysfs tree built under a temporary directory from the kernel's
documented layout, the probe's one `sysfs=/sys` line pointed at it (only tests do that):
Documentation/ABI/stable/sysfs-block (/sys/block/<disk>/<part>/partition, holders/ and slaves/ as symlinks to
the devices above and below), Documentation/ABI/testing/sysfs-block-dm (dm/name, dm/uuid) and
Documentation/admin-guide/md.rst (md/level; the members under slaves/); LVM's dm uuids start with "LVM-" (lvm2's
UUID_PREFIX). /sys/dev/block/<major>:<minor> leads from a device node to its directory: the tree maps a real
block device node of this machine there, so the probe starts from a real `stat` as on a host.
"""

from __future__ import annotations

import os
import shlex
import stat
import subprocess
from pathlib import Path

import pytest

from jobs import environment
from tests.loops import Lab, partitioned_loop, sh

FIXTURES = Path(__file__).parent.parent / "fixtures" / "environment"


def run_probe(target: str | Path, kind: str, sysfs: Path | None = None) -> str:
    script = environment.probe_script(str(target), kind)
    if sysfs is not None:
        assert script.count("\nsysfs=/sys\n") == 1
        script = script.replace("\nsysfs=/sys\n", f"\nsysfs={shlex.quote(str(sysfs))}\n")
    result = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    return result.stdout


def chain_of(target: str | Path, kind: str, sysfs: Path | None = None) -> dict:
    return environment.parse_report(run_probe(target, kind, sysfs))["device"]["chain"]


# ------------------------------------------------------------------------------------------ loop devices


def test_a_loop_device_is_its_own_chain_with_no_members(lab: Lab) -> None:
    device = lab.loop("plain")
    name = Path(device).name
    found = environment.parse_report(run_probe(device, "block"))
    assert found["device"]["chain"] == {
        "top": name, "nodes": [{"name": name, "kind": "loop"}], "members": [], "text": name,
    }  # fmt: skip
    assert environment.chain_devices(found) == [name]


def test_a_partition_leads_to_its_whole_disk_and_its_own_counters_are_the_ones_read(lab: Lab) -> None:
    device = partitioned_loop(lab)
    disk = Path(device).name
    found = environment.parse_report(run_probe(f"{device}p1", "block"))
    chain = found["device"]["chain"]
    assert chain["nodes"] == [
        {"name": f"{disk}p1", "kind": "partition"},
        {"name": disk, "kind": "loop", "parent": f"{disk}p1"},
    ]
    assert chain["members"] == [] and chain["text"] == f"{disk}p1 → {disk}"
    assert environment.chain_devices(found) == [f"{disk}p1"]
    # Every name it gives has its line in /proc/diskstats, which the telemetry reads.
    assert f" {disk}p1 " in Path("/proc/diskstats").read_text()


def test_a_directory_on_a_mounted_partition_gets_the_partitions_chain(lab: Lab) -> None:
    device = partitioned_loop(lab)
    sh("mkfs.ext4", "-q", f"{device}p1")
    mountpoint = lab.mount(f"{device}p1")
    (mountpoint / "bench").mkdir()
    chain = chain_of(mountpoint / "bench", "directory")
    assert chain["top"] == f"{Path(device).name}p1"
    assert chain["text"] == f"{Path(device).name}p1 → {Path(device).name}"


# ------------------------------------------------------- device-mapper and md, from the documented layout


class SysfsTree:
    """A sysfs tree as the kernel lays it out: each device's directory under devices/ (a partition inside its
    disk's), /sys/class/block/<name> and /sys/dev/block/<M:m> as relative symlinks to it, slaves/ and holders/
    linking a stacked device and its members."""

    def __init__(self, root: Path) -> None:
        self.root = root
        (root / "class" / "block").mkdir(parents=True)
        (root / "dev" / "block").mkdir(parents=True)

    def disk(self, name: str, where: str = "devices/pci0000:00/0000:00:04.0/virtio1/block", **files: str) -> Path:
        return self._device(self.root / where / name, files)

    def partition(self, disk: Path, name: str, number: int) -> Path:
        return self._device(disk / name, {"partition": str(number), "start": "2048"})

    def dm(self, name: str, dm_name: str, uuid: str, members: list[Path]) -> Path:
        files = {"dm/name": dm_name, "dm/uuid": uuid, "dm/suspended": "0"}
        return self._stack(self._device(self.root / "devices/virtual/block" / name, files), members)

    def md(self, name: str, level: str, members: list[Path]) -> Path:
        files = {"md/level": level, "md/raid_disks": str(len(members))}
        return self._stack(self._device(self.root / "devices/virtual/block" / name, files), members)

    def node(self, device: Path, node: str) -> None:
        """Where the probe's stat of `node` leads: /sys/dev/block/<its major:minor> → the device's directory."""
        rdev = os.stat(node).st_rdev
        link = self.root / "dev" / "block" / f"{os.major(rdev)}:{os.minor(rdev)}"
        link.symlink_to(os.path.relpath(device, link.parent))

    def _device(self, path: Path, files: dict[str, str]) -> Path:
        (path / "queue").mkdir(parents=True)
        for name, text in {"size": "2097152", "queue/nr_requests": "256", **files}.items():
            (path / name).parent.mkdir(parents=True, exist_ok=True)
            (path / name).write_text(text + "\n")
        for folder in ("holders", "slaves") if "partition" not in files else ("holders",):
            (path / folder).mkdir(exist_ok=True)
        link = self.root / "class" / "block" / path.name
        link.symlink_to(os.path.relpath(path, link.parent))
        return path

    def _stack(self, holder: Path, members: list[Path]) -> Path:
        for member in members:
            (holder / "slaves" / member.name).symlink_to(os.path.relpath(member, holder / "slaves"))
            (member / "holders" / holder.name).symlink_to(os.path.relpath(holder, member / "holders"))
        return holder


def a_block_device_node() -> str:
    for node in sorted(Path("/dev").iterdir()):
        try:
            if stat.S_ISBLK(node.stat().st_mode):
                return str(node)
        except OSError:
            continue
    pytest.skip("no block device node in /dev for the probe to stat")


@pytest.fixture
def tree(tmp_path: Path) -> SysfsTree:
    return SysfsTree(tmp_path / "sys")


def test_an_lvm_stripe_of_eight_disks_is_read_down_to_each_member(tree: SysfsTree) -> None:
    disks = [tree.disk(f"vd{letter}") for letter in "bcdefghi"]
    lv = tree.dm("dm-3", "vg0-lv", "LVM-" + "a" * 64, disks)
    node = a_block_device_node()
    tree.node(lv, node)
    text = run_probe(node, "block", tree.root)
    found = environment.parse_report(text)
    assert found["device"]["name"] == "dm-3" and found["device"]["dm_name"] == "vg0-lv"
    chain = found["device"]["chain"]
    assert chain["top"] == "dm-3" and chain["label"] == "vg0/lv"
    assert chain["text"] == "vg0/lv → dm-3 → vdb…vdi"
    assert chain["members"] == ["vdb", "vdc", "vdd", "vde", "vdf", "vdg", "vdh", "vdi"]
    assert chain["nodes"][0] == {"name": "dm-3", "kind": "dm", "dm_name": "vg0-lv", "dm_subsystem": "LVM"}
    assert chain["nodes"][1:] == [{"name": disk.name, "kind": "disk", "parent": "dm-3"} for disk in disks]
    assert environment.chain_devices(found) == ["dm-3", *chain["members"]]
    # The recorded report the parser's own tests read has these very chain lines.
    assert chain_lines(text) == chain_lines(recorded("lvm_stripe.txt"))


def test_lvm_on_md_on_partitions_is_read_through_every_level(tree: SysfsTree) -> None:
    sda, sdb = (
        tree.disk("sda", "devices/pci0000:00/0000:00:1f.2/ata1/block"),
        tree.disk("sdb", "devices/pci0000:00/0000:00:1f.2/ata2/block"),
    )
    md0 = tree.md("md0", "raid1", [tree.partition(sda, "sda1", 1), tree.partition(sdb, "sdb1", 1)])
    data = tree.dm("dm-0", "my--vg-data", "LVM-" + "b" * 64, [md0])
    node = a_block_device_node()
    tree.node(data, node)
    text = run_probe(node, "block", tree.root)
    chain = environment.parse_report(text)["device"]["chain"]
    assert chain["label"] == "my-vg/data"
    assert chain["text"] == "my-vg/data → dm-0 → md0 → sda1, sdb1 → sda, sdb"
    assert chain["members"] == ["sda1", "sdb1"]
    assert {node["name"]: node.get("parent") for node in chain["nodes"]} == {
        "dm-0": None, "md0": "dm-0", "sda1": "md0", "sdb1": "md0", "sda": "sda1", "sdb": "sdb1",
    }  # fmt: skip
    assert [node.get("md_level") for node in chain["nodes"]][1] == "raid1"
    assert chain_lines(text) == chain_lines(recorded("lvm_md_partitions.txt"))


def test_a_partition_of_an_md_array_has_the_arrays_members_below_it(tree: SysfsTree) -> None:
    members = [tree.disk(name, "devices/pci0000:00/0000:00:05.0/nvme/nvme0") for name in ("nvme0n1", "nvme1n1")]
    md127 = tree.md("md127", "raid0", members)
    part = tree.partition(md127, "md127p1", 1)
    node = a_block_device_node()
    tree.node(part, node)
    found = environment.parse_report(run_probe(node, "block", tree.root))
    assert found["device"]["partition_of"] == "md127"
    chain = found["device"]["chain"]
    assert chain["text"] == "md127p1 → md127 → nvme0n1, nvme1n1" and chain["members"] == ["nvme0n1", "nvme1n1"]


def test_the_chain_stays_bounded_at_64_devices(tree: SysfsTree) -> None:
    """70 members: 64 devices are read, in the shell's glob order (loop0, loop1, loop10…loop19, loop2, …), and
    the rest said to be left."""
    disks = [tree.disk(f"loop{n}", "devices/virtual/block", **{"loop/backing_file": f"/img/{n}"}) for n in range(70)]
    wide = tree.dm("dm-1", "wide", "", disks)
    node = a_block_device_node()
    tree.node(wide, node)
    chain = chain_of(node, "block", tree.root)
    assert len(chain["nodes"]) == 64 and chain["truncated"] == "more than 64 devices"
    assert chain["text"] == "wide → dm-1 → loop0…loop6, loop10…loop65 (and more not read)"
    assert chain["nodes"][1]["kind"] == "loop" and "dm_subsystem" not in chain["nodes"][0]


def test_devices_that_name_each_other_are_read_once_and_an_odd_member_name_is_not_read(tree: SysfsTree) -> None:
    """Two dm devices each under the other (a tree no kernel makes) are each read once; a member whose name holds
    a blank and a glob is left out and said so, without splitting the list of devices still to read."""
    first = tree.dm("dm-5", "a", "", [tree.disk("x *", "devices/virtual/block")])
    second = tree.dm("dm-6", "b", "", [first])
    tree._stack(first, [second])
    node = a_block_device_node()
    tree.node(second, node)
    chain = chain_of(node, "block", tree.root)
    assert [node["name"] for node in chain["nodes"]] == ["dm-6", "dm-5"]
    assert chain["truncated"] == "a device under dm-5 has a name benchweb does not read"


def test_a_stack_deeper_than_eight_levels_is_cut_there(tree: SysfsTree) -> None:
    below = tree.disk("vdb")
    for n in range(10):
        below = tree.dm(f"dm-{n}", f"level{n}", "", [below])
    node = a_block_device_node()
    tree.node(below, node)
    chain = chain_of(node, "block", tree.root)
    assert chain["truncated"] == "more than 8 levels: what dm-1 is made of"
    assert [node["name"] for node in chain["nodes"]] == [f"dm-{n}" for n in range(9, 0, -1)]


def recorded(name: str) -> str:
    return (FIXTURES / name).read_text()


def chain_lines(report: str) -> list[str]:
    return [line for line in report.splitlines() if line.startswith(("dev_name=", "dev_dm_name=", "chain_"))]
