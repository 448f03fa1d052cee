"""The verdict: whether a run may go ahead on a target, from the report the probe printed (pure)."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from jobs.safety.identity import IDENTITY_LABELS, _size, describe_identity, identity_changes, identity_of
from jobs.safety.probe import _PATH_PROBLEMS, KINDS, _int, _one, _unescape_hex, _unescape_octal, parse_report

# A device benchweb cannot fully inspect is not safe to overwrite.
REQUIRED_TOOLS = ("lsblk", "blkid", "wipefs")
CANNOT_CHECK = "benchweb refuses to write to a device it cannot check."

PARTITION_TABLES = set("dos gpt PMBR atari bsd mac sgi sun solaris unixware minix".split())
# Signature names wipefs prints without blkid's USAGE; blkid's USAGE=filesystem catches the rest.
FILESYSTEMS = set(
    "ext2 ext3 ext4 ext4dev jbd xfs btrfs vfat exfat ntfs f2fs jfs reiserfs iso9660 udf squashfs erofs hfs "
    "hfsplus nilfs2 ocfs2 gfs2 zonefs".split()
)


@dataclass(frozen=True)
class Verdict:
    ok: bool
    reasons: list[str] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)
    # What a person should know that does not stop the run (a directory now on another filesystem).
    warnings: list[str] = field(default_factory=list)


def judge(
    report_text: str,
    *,
    kind: str,
    writes: bool,
    allow_destructive: bool,
    needed_bytes: int | None = None,
    recorded_identity: dict[str, Any] | None = None,
) -> Verdict:
    """recorded_identity is what the disk's registration saw (see `identity_of`); a block device that no
    longer matches it is refused for writes, a directory on another filesystem gets a warning."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, not {kind!r}")
    values, complete = parse_report(report_text)
    target = _one(values, "target")
    facts: dict[str, Any] = {"kind": kind, "writes": writes, "target": target}
    if not complete:
        return _refuse(
            facts,
            "the safety check on the host did not finish, so nothing was written; check that the host runs "
            "a POSIX sh and that the SSH connection stays up, then try again.",
        )
    if _one(values, "kind") != kind or (writes and _one(values, "writes") != "yes"):
        return _refuse(
            facts,
            f"the safety report was made for a {_one(values, 'kind')} target with writes={_one(values, 'writes')}, "
            f"not for this {'write' if writes else 'read'} run on a {kind} target; run the check again.",
        )
    invalid = _one(values, "invalid")
    if invalid:
        why = _PATH_PROBLEMS.get(invalid, "cannot be checked")
        return _refuse(facts, f"the target path '{target}' {why}; fix the disk's target path.")

    real = _one(values, "realpath") or target
    facts |= {
        "realpath": real,
        "symlink": _one(values, "symlink") == "yes",
        "type": _one(values, "type"),
        "user": _one(values, "user"),
        "missing_tools": values.get("missing_tool", []),
    }
    if kind == "directory":
        reasons = _judge_directory(values, facts, needed_bytes)
    else:
        reasons = _judge_block(values, facts, writes, allow_destructive, needed_bytes)
    warnings: list[str] = []
    if facts["type"] == kind:
        facts["identity"] = found = identity_of(values, kind)
        if recorded_identity:
            changed = _identity_problem(recorded_identity, found, facts, writes)
            if changed and kind == "block" and writes:
                reasons.insert(0, changed)
            elif changed:
                warnings.append(changed)
    return Verdict(ok=not reasons, reasons=reasons, facts=facts, warnings=warnings)


def _identity_problem(recorded: dict[str, Any], found: dict[str, Any], facts: dict[str, Any], writes: bool) -> str:
    changed = identity_changes(recorded, found)
    facts["identity_changes"] = changed
    if not changed:
        return ""
    target = facts["target"]
    what = ", ".join(IDENTITY_LABELS.get(key, key) for key in changed)
    both = f"registered {describe_identity(recorded)}; found {describe_identity(found)} (changed: {what})"
    again = "if the disk was replaced on purpose, record its identity again on the disk page"
    if found.get("kind") == "directory":
        return (
            f"{target} is now on another filesystem than when it was registered: {both}. The results may not "
            f"compare with earlier runs; {again}."
        )
    if not writes:
        return f"{target} is not the disk registered: {both}. This read run measures a different disk; {again}."
    return (
        f"{target} is not the disk registered: {both}. benchweb never writes to a disk it cannot tell is the "
        f"one registered; {again}."
    )


def _refuse(facts: dict[str, Any], reason: str) -> Verdict:
    return Verdict(ok=False, reasons=[reason], facts=facts)


def _judge_directory(values: dict[str, list[str]], facts: dict[str, Any], needed_bytes: int | None) -> list[str]:
    """Directory targets are always written to: even a read profile lays out its test file first."""
    target, kind_found = facts["target"], facts["type"]
    if kind_found == "missing":
        broken = f" (a symlink to {_one(values, 'link')}, which does not exist)" if facts["symlink"] else ""
        return [
            f"{target} does not exist on the host{broken}: create it (mkdir -p {shlex.quote(facts['realpath'])}) "
            "or fix the disk's target path."
        ]
    if kind_found != "directory":
        return [
            f"{target} is {_describe_type(kind_found)} on the host, not a directory: fix the disk's target path, "
            "or set the disk's kind to block device if you mean the device itself."
        ]
    reasons = []
    facts["writable"] = _one(values, "writable") == "yes"
    if not facts["writable"]:
        reasons.append(
            f"{target} is not writable for {facts['user'] or 'the SSH user'} on the host (permissions, a read-only "
            "mount or an immutable flag); make it writable or choose another directory."
        )
    facts["free_bytes"] = free = _free_bytes(values)
    if needed_bytes is not None:
        if free is None:
            reasons.append(
                f"could not read the free space in {target} (neither stat -f nor df -Pk answered); "
                "benchweb does not fill a filesystem it cannot measure."
            )
        elif free < needed_bytes:
            reasons.append(
                f"not enough free space: {_size(needed_bytes)} needed, {_size(free)} free in {target}; "
                "free some space or lower the profile's size."
            )
    return reasons


def _free_bytes(values: dict[str, list[str]]) -> int | None:
    try:
        if statfs := _one(values, "statfs"):
            available, block_size = statfs.split()
            return int(available) * int(block_size)
        if df := _one(values, "df"):
            return int(df.split()[3]) * 1024
    except (ValueError, IndexError):
        return None
    return None


def _describe_type(kind_found: str) -> str:
    return {
        "block": "a block device",
        "directory": "a directory",
        "character": "a character device",
        "regular": "a regular file",
    }.get(kind_found, "a special file (a socket or a FIFO)")


def _judge_block(
    values: dict[str, list[str]],
    facts: dict[str, Any],
    writes: bool,
    allow_destructive: bool,
    needed_bytes: int | None,
) -> list[str]:
    target, kind_found = facts["target"], facts["type"]
    if kind_found == "missing":
        broken = f" (a symlink to {_one(values, 'link')}, which does not exist)" if facts["symlink"] else ""
        return [
            f"{target} does not exist on the host{broken}: check the device name (lsblk on the host lists them) "
            "or fix the disk's target path."
        ]
    if kind_found != "block":
        return [
            f"{target} is {_describe_type(kind_found)} on the host, not a block device: fix the disk's target "
            "path, or set the disk's kind to directory if you mean a directory to put test files in."
        ]
    facts["device"] = facts["realpath"]
    # Name the device the way the disk does, and what it resolved to (a by-id link, a mapper alias).
    device = target if facts["realpath"] == target else f"{target} ({facts['realpath']})"
    if not writes:
        return []
    reasons = []
    if not allow_destructive:
        reasons.append(
            f"writes to a block device need 'allow destructive' on the disk; a write profile overwrites "
            f"everything on {device}. Tick it on the disk only if that is what you want, or run a read profile."
        )
    reasons += _unverifiable(values, facts, device)
    layout = _layout(values, facts)
    reasons += _in_use(layout, facts, device)
    reasons += _signatures(values, facts, device)
    size = _int(_one(values, "size_sectors"))
    facts["size_bytes"] = size * 512 if size is not None else None
    facts["read_only"] = _one(values, "ro") == "1"
    if facts["read_only"]:
        reasons.append(
            f"{device} is read-only (/sys/class/block/{facts['name']}/ro is 1), so a write profile cannot run on it; "
            "run a read profile or make the device writable."
        )
    if needed_bytes is not None and facts["size_bytes"] is not None and facts["size_bytes"] < needed_bytes:
        reasons.append(
            f"{device} is too small: {_size(needed_bytes)} needed, {_size(facts['size_bytes'])} on the device; "
            "lower the profile's size or choose a bigger device."
        )
    return reasons


def _unverifiable(values: dict[str, list[str]], facts: dict[str, Any], device: str) -> list[str]:
    reasons = []
    missing = [tool for tool in REQUIRED_TOOLS if tool in facts["missing_tools"]]
    if missing:
        verb = "is" if len(missing) == 1 else "are"
        reasons.append(
            f"cannot verify {device}: {', '.join(missing)} {verb} missing on the host (util-linux provides "
            f"them); {CANNOT_CHECK}"
        )
    if _one(values, "readable") != "yes":
        reasons.append(
            f"cannot verify {device}: {facts['user'] or 'the SSH user'} cannot read it, so its signatures "
            f"cannot be probed; connect as a user that can (usually root). {CANNOT_CHECK}"
        )
    if _one(values, "sysfs") != "yes":
        reasons.append(
            f"cannot verify {device}: the host has no /sys/dev/block entry for it (major:minor "
            f"{_one(values, 'majmin') or 'unknown'}), so its partitions and holders cannot be listed. {CANNOT_CHECK}"
        )
    if _one(values, "mountinfo") != "yes":
        reasons.append(
            f"cannot verify {device}: /proc/self/mountinfo is not readable on the host, so mounts cannot be "
            f"checked. {CANNOT_CHECK}"
        )
    for tool in REQUIRED_TOOLS:
        rc = _one(values, f"{tool}_rc")
        failed = rc not in ("", "0") and not (tool == "blkid" and rc in ("2", "8"))
        # blkid exits 2 both for "nothing found" and for "could not open"; only the latter prints a message.
        if tool == "blkid" and rc == "2":
            failed = any(not _EXPORT_LINE.match(line) for line in values.get("blkid", []))
        if failed:
            output = [line for key in (tool, f"{tool}_p") for line in values.get(key, [])]
            detail = f": {output[-1]}" if output else ""
            reasons.append(f"cannot verify {device}: {tool} failed on the host (exit {rc}{detail}). {CANNOT_CHECK}")
    return reasons


_EXPORT_LINE = re.compile(r"[A-Z_]+=")


@dataclass
class _Layout:
    """What sits on or above the device: its partitions, holders, mounts and active swap, by kernel name."""

    names: dict[str, str] = field(default_factory=dict)  # major:minor -> kernel name
    partitions: list[str] = field(default_factory=list)
    holders: list[str] = field(default_factory=list)
    mounts: dict[str, list[str]] = field(default_factory=dict)  # kernel name -> mountpoints
    swaps: list[str] = field(default_factory=list)


def _layout(values: dict[str, list[str]], facts: dict[str, Any]) -> _Layout:
    layout = _Layout()
    name = facts["name"] = _one(values, "name")
    facts["majmin"] = _one(values, "majmin")
    facts["parent"] = _one(values, "parent") or None
    layout.names[facts["majmin"]] = name
    for line in values.get("partition", []):
        part, _, majmin = line.partition(" ")
        layout.partitions.append(part)
        layout.names[majmin] = part
    for line in values.get("holder", []):
        of, holder, *dm_name = line.split(" ", 2)
        label = f"{holder} ({dm_name[0]})" if dm_name else holder
        layout.holders.append(label if of == name else f"{label} on {of}")
    for line in values.get("mount", []):
        majmin, _source, mountpoint = [*line.split(" ", 2), "", ""][:3]
        _add_mount(layout, layout.names.get(majmin, majmin), _unescape_octal(mountpoint))
    for line in values.get("swap", []):
        majmin, _, swap_file = line.partition(" ")
        layout.swaps.append(layout.names.get(majmin, swap_file))
    _merge_lsblk(values, layout, name, facts["majmin"])
    facts["partitions"] = layout.partitions
    facts["holders"] = layout.holders
    facts["mounts"] = [{"device": dev, "mountpoint": mp} for dev, mps in layout.mounts.items() for mp in mps]
    facts["swaps"] = layout.swaps
    return layout


def _add_mount(layout: _Layout, name: str, mountpoint: str) -> None:
    mountpoints = layout.mounts.setdefault(name, [])
    if mountpoint not in mountpoints:
        mountpoints.append(mountpoint)


def _merge_lsblk(values: dict[str, list[str]], layout: _Layout, name: str, majmin_self: str) -> None:
    """lsblk reads the same kernel tables another way; anything it sees that sysfs did not still counts."""
    for line in values.get("lsblk", []):
        fields = line.split()
        if len(fields) < 3 or not re.fullmatch(r"[0-9]+:[0-9]+", fields[2]):
            continue
        kname, dev_type, majmin = fields[0], fields[1], fields[2]
        mountpoint = _unescape_hex(fields[3]) if len(fields) > 3 else ""
        if kname != name and majmin != majmin_self and majmin not in layout.names:
            if dev_type == "part":
                layout.partitions.append(kname)
            elif not any(h == kname or h.startswith(kname + " ") for h in layout.holders):
                layout.holders.append(f"{kname} ({dev_type}, lsblk)")
            layout.names[majmin] = kname
        if mountpoint == "[SWAP]":
            if kname not in layout.swaps:
                layout.swaps.append(kname)
        elif mountpoint:
            _add_mount(layout, kname, mountpoint)


def _in_use(layout: _Layout, facts: dict[str, Any], device: str) -> list[str]:
    reasons = []
    name = facts["name"]
    if layout.partitions:
        reasons.append(
            f"{device} has partitions ({', '.join(layout.partitions)}); benchweb never writes to a partitioned "
            "device. Choose an unused device, or wipe the partition table yourself if you really mean it."
        )
    if layout.holders:
        reasons.append(
            f"{device} is held by {', '.join(layout.holders)} (/sys/class/block/*/holders): it is part of an LVM "
            "volume, an md array or another device-mapper device, and benchweb never writes to a device "
            "something else is built on. Take that apart yourself if you really mean it, or choose another device."
        )
    for dev, mountpoints in layout.mounts.items():
        who = _who(dev, name, layout, device)
        reasons.append(
            f"{who} is mounted at {', '.join(mountpoints)}; benchweb never writes to a mounted device. "
            "Unmount it yourself if you really mean it, or choose another device."
        )
    for dev in layout.swaps:
        who = _who(dev, name, layout, device)
        reasons.append(
            f"{who} is in use as swap (/proc/swaps); benchweb never writes to active swap. "
            "Run swapoff yourself if you really mean it, or choose another device."
        )
    return reasons


def _who(dev: str, name: str, layout: _Layout, device: str) -> str:
    if dev == name:
        return device
    return f"partition {dev} of {device}" if dev in layout.partitions else f"{dev}, which is built on {device},"


def _signatures(values: dict[str, list[str]], facts: dict[str, Any], device: str) -> list[str]:
    found: dict[str, list[str]] = {}  # signature type -> tools that saw it
    usage = ""
    for line in values.get("blkid", []):
        key, _, value = line.partition("=")
        if key in ("TYPE", "PTTYPE"):
            found.setdefault(value, []).append("blkid")
        elif key == "USAGE":
            usage = value
    wipefs_types = []
    # A failed wipefs printed an error, not signatures; _unverifiable already refuses it.
    if _one(values, "wipefs_rc") == "0":
        wipefs_types += [line.split()[0] for line in values.get("wipefs", []) if line.split()]
        wipefs_types += [line.rsplit(",", 1)[-1] for line in values.get("wipefs_p", []) if not line.startswith("#")]
    for sig_type in wipefs_types:
        if "wipefs" not in found.setdefault(sig_type, []):
            found[sig_type].append("wipefs")
    facts["signatures"] = [{"type": sig_type, "seen_by": tools} for sig_type, tools in found.items()]
    reasons = []
    if _one(values, "blkid_rc") == "8":
        reasons.append(
            f"{device} holds several conflicting signatures (blkid -p exit 8); benchweb never writes to a device "
            "with signatures. Wipe it yourself if you really mean it, or choose another device."
        )
    for sig_type, tools in found.items():
        what, noun = _signature_words(sig_type, usage if "blkid" in tools else "")
        reasons.append(
            f"{device} holds {what} ({', '.join(tools)}); benchweb never writes to a device with {noun}. "
            "Wipe it yourself if you really mean it, or choose another device."
        )
    return reasons


def _signature_words(sig_type: str, usage: str) -> tuple[str, str]:
    """How to name a signature for a person: what the device holds, and the general noun for it."""
    if sig_type in PARTITION_TABLES:
        return f"a {sig_type} partition table", "a partition table"
    if sig_type in ("swap", "swsuspend"):
        return f"a {sig_type} signature", "swap space"
    if sig_type == "LVM2_member":
        return "an LVM physical volume (LVM2_member)", "LVM metadata"
    if sig_type.endswith("_raid_member") or usage == "raid":
        return f"a RAID member signature ({sig_type})", "RAID metadata"
    if sig_type.startswith("crypto_") or usage == "crypto":
        return f"an encrypted volume ({sig_type})", "an encrypted volume"
    if sig_type in FILESYSTEMS or usage == "filesystem":
        return f"{_article(sig_type)} {sig_type} filesystem", "a filesystem"
    return f"{_article(sig_type)} {sig_type} signature", "a signature"


def _article(word: str) -> str:
    if word in _SPELLED_WITH_A_VOWEL_SOUND:
        return "an"
    return "an" if word[:1].lower() in "aeio" else "a"


# Names said letter by letter whose first letter sounds like a vowel ("an xfs", "an ntfs").
_SPELLED_WITH_A_VOWEL_SOUND = {"xfs", "f2fs", "ntfs", "hfs", "hfsplus"}
