"""A target's identity: what the probe's id_* lines say it is, and whether it is still the disk registered (pure)."""

from __future__ import annotations

import re
from typing import Any

from jobs.safety.probe import _int, _one, _unescape_hex

# Facts that tell one disk from another, as a person reads them; model only backs the others up, because
# two disks of one model are common and a firmware update may rename one.
IDENTITY_LABELS = {
    "wwn": "WWN",
    "serial": "serial",
    "partuuid": "PARTUUID",
    "by_id": "by-id",
    "backing_file": "backing file",
    "backing_inode": "backing inode",
    "size_bytes": "size",
    "model": "model",
    "fs_uuid": "filesystem UUID",
    "fsid": "filesystem id",
}
_PAIR = re.compile(r'([A-Z:_-]+)="((?:[^"\\]|\\.)*)"')


def identity_of(values: dict[str, list[str]], kind: str) -> dict[str, Any]:
    """What the probe's id_* lines say the target is; a fact the host did not give is left out."""
    if kind == "directory":
        mount = _pairs(_one(values, "id_findmnt"))
        fsid = _one(values, "id_fsid").strip()
        identity: dict[str, Any] = {
            "kind": "directory",
            "fs_uuid": mount.get("UUID") or _one(values, "id_blkid_uuid").strip(),
            "fs_source": mount.get("SOURCE", ""),
            "fs_type": mount.get("FSTYPE", ""),
            "mountpoint": mount.get("TARGET", ""),
            # tmpfs and some others have no fsid: all zeros says nothing.
            "fsid": fsid if fsid.strip("0") else "",
        }
        return {key: value for key, value in identity.items() if value}
    lsblk = _pairs(_one(values, "id_lsblk"))
    sectors = _int(_one(values, "id_size_sectors"))
    identity = {
        "kind": "block",
        "wwn": lsblk.get("WWN") or _first(values, "id_sysfs_wwid"),
        "serial": lsblk.get("SERIAL") or _first(values, "id_sysfs_serial"),
        "model": lsblk.get("MODEL") or _first(values, "id_sysfs_model"),
        "partuuid": lsblk.get("PARTUUID", ""),
        "size_bytes": sectors * 512 if sectors is not None else None,
        "by_id": sorted(set(values.get("id_by_id", []))),
        "backing_file": _one(values, "id_backing_file"),
        "backing_inode": _backing_inode(values),
    }
    return {key: value for key, value in identity.items() if value not in ("", None, [])}


def _pairs(line: str) -> dict[str, str]:
    """lsblk -P / findmnt -P output: KEY="value" pairs, special characters escaped as \\xHH."""
    return {key: _unescape_hex(value).strip() for key, value in _PAIR.findall(line)}


def _first(values: dict[str, list[str]], key: str) -> str:
    return next((value.strip() for value in values.get(key, []) if value.strip()), "")


def _backing_inode(values: dict[str, list[str]]) -> str:
    """The attached file's inode and its filesystem's major:minor, e.g. "2147573 on 254:0"."""
    fields = _one(values, "id_losetup").split()
    if len(fields) == 2 and fields[0].isdigit():
        return f"{fields[0]} on {fields[1]}"
    fields = _one(values, "id_backing_stat").split()
    if len(fields) == 2 and fields[0].isdigit() and re.fullmatch(r"[0-9a-fA-F]+", fields[1]):
        dev = int(fields[1], 16)  # stat %D: the kernel's dev_t, split as glibc's major() and minor() do
        major = ((dev >> 8) & 0xFFF) | ((dev >> 32) & ~0xFFF)
        minor = (dev & 0xFF) | ((dev >> 12) & ~0xFF)
        return f"{fields[0]} on {major}:{minor}"
    return ""


def identity_changes(recorded: dict[str, Any], found: dict[str, Any]) -> list[str]:
    """The facts in which found is not the recorded disk, by key. A fact missing on both sides is no
    difference; one the registration saw and the target no longer shows (or the reverse) is."""
    if recorded.get("kind", found.get("kind")) != found.get("kind"):
        return ["kind"]
    if found.get("kind") == "directory":
        for key in ("fs_uuid", "fsid"):
            # The UUID when both sides have one; the statfs id only when neither has a UUID.
            if recorded.get(key) and found.get(key):
                return [key] if recorded[key] != found[key] else []
        return []
    changed = [
        key
        for key in ("wwn", "serial", "partuuid", "backing_file", "backing_inode", "size_bytes")
        if recorded.get(key) != found.get(key)
    ]
    old_links, new_links = set(recorded.get("by_id", [])), set(found.get("by_id", []))
    if (old_links or new_links) and not old_links & new_links:
        changed.append("by_id")
    if changed and recorded.get("model") != found.get("model"):
        changed.append("model")
    return changed


def describe_identity(identity: dict[str, Any]) -> str:
    """One line a person can compare with lsblk or losetup on the host."""
    parts = []
    for key, label in IDENTITY_LABELS.items():
        value = identity.get(key)
        if not value:
            continue
        if key == "size_bytes":
            parts.append(_size(value))
        elif key == "by_id":
            parts.append(f"by-id {', '.join(value)}")
        elif key == "backing_file":
            parts.append(f"backing {value}")
        elif key == "backing_inode":
            parts.append(f"inode {value}")
        else:
            parts.append(f"{label} {value}")
    if identity.get("kind") == "directory" and identity.get("fs_source"):
        parts.append(f"{identity.get('fs_type', '')} {identity['fs_source']} on {identity.get('mountpoint', '?')}")
    return ", ".join(parts) or "nothing that identifies it"


def _size(n: int) -> str:
    for factor, unit in ((2**40, "TiB"), (2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB")):
        if n >= factor:
            return f"{n / factor:.1f} {unit}"
    return f"{n} bytes"
