"""The device chain under a target: the devices its I/O goes through, read from the probe's chain_* lines (pure).

A logical volume on a stripe of eight disks is `vg0/lv → dm-3 → vdb…vdi`: the dm name, the kernel name of the
device the target resolves to, then each level below it. The probe (probe.sh, `device_chain`) walks sysfs from
the target's device: a partition's whole disk (its directory's parent), and the devices a device-mapper or md
device is made of (`slaves/`, recursively). The dict kept at Run.environment["device"]["chain"]:

    top        kernel name of the target's device (under a directory: the filesystem's source)
    label      for a device-mapper top: "vg0/lv" for an LVM volume (its dm uuid starts with LVM-; "--" in a dm
               name is one "-"), else the dm name as it is; absent for any other top
    nodes      [{name, kind: disk | partition | dm | md | loop, parent, dm_name, dm_subsystem, md_level}], top
               first; parent is the device it was reached from (for a member its dm or md device, for a
               whole disk its partition), absent for the top; the others only where sysfs has them
    members    kernel names of the devices at the bottom of a dm/md stack: the ones doing the I/O. A member that
               is a partition stays the partition (its /proc/diskstats line counts what the stack sent it; its
               whole disk's line also counts its neighbours). Empty for a plain disk, partition or loop device.
    text       "vg0/lv → dm-3 → vdb…vdi": a level per arrow; a run of three or more consecutive names is a range
    truncated  why the probe stopped reading (more than 64 devices or 8 levels, a name it does not read)

`chain_devices(environment)` gives the kernel names whose /proc/diskstats lines tell what a run did to the device:
the top and its members.
"""

from __future__ import annotations

import re
from typing import Any

KINDS = ("disk", "partition", "dm", "md", "loop")
MAX_NODES = 64
# A kernel block device name as the probe lets it through (sda, nvme0n1p1, dm-3, md127, cciss!c0d0).
_NAME = re.compile(r"[A-Za-z0-9._+!:-]{1,64}")
# Text values from sysfs (a dm name, an md level) are kept whole up to this length.
MAX_TEXT = 200
_ATTRIBUTES = {"chain_dm_name": "dm_name", "chain_dm_subsystem": "dm_subsystem", "chain_md_level": "md_level"}


def parse_chain(pairs: list[tuple[str, str]]) -> dict[str, Any] | None:
    """The chain dict (see the module's docstring) from the report's pairs in order (only chain_* keys are read);
    None when the probe listed no top."""
    top = next((value.strip() for key, value in pairs if key == "chain_top"), "")
    if not _NAME.fullmatch(top):
        return None
    nodes: dict[str, dict[str, Any]] = {}
    truncated = None
    for key, value in pairs:
        name, _, rest = value.strip().partition(" ")
        if key == "chain_node":
            node = _node(name, rest, nodes, top)
            if node and len(nodes) < MAX_NODES:
                nodes.setdefault(name, node)
        elif key in _ATTRIBUTES and name in nodes and rest.strip():
            nodes[name].setdefault(_ATTRIBUTES[key], rest.strip()[:MAX_TEXT])
        elif key == "chain_truncated" and truncated is None:
            truncated = value.strip()[:MAX_TEXT]
    if top not in nodes:
        return None
    chain: dict[str, Any] = {"top": top}
    label = _label(nodes[top])
    if label:
        chain["label"] = label
    chain["nodes"] = list(nodes.values())
    chain["members"] = members(chain["nodes"], top)
    chain["text"] = chain_text(chain["nodes"], label) + (" (and more not read)" if truncated else "")
    if truncated:
        chain["truncated"] = truncated
    return chain


def _node(name: str, rest: str, nodes: dict[str, dict[str, Any]], top: str) -> dict[str, Any] | None:
    """One chain_node line, "<name> <kind> <parent or ->": the top has no parent, every other node's parent was
    listed before it (the probe lists a device after the one it was reached from)."""
    kind, _, parent = rest.partition(" ")
    if not _NAME.fullmatch(name) or kind not in KINDS:
        return None
    if name == top and parent == "-":
        return {"name": name, "kind": kind}
    if name != top and parent in nodes:
        return {"name": name, "kind": kind, "parent": parent}
    return None


def lvm_name(dm_name: str) -> str | None:
    """ "vg0-lv" → "vg0/lv": LVM joins the volume group and the volume with one "-" and doubles any "-" inside
    either ("my--vg-data" is my-vg/data); None when the name is not two such parts."""
    parts = [""]
    i = 0
    while i < len(dm_name):
        if dm_name.startswith("--", i):
            parts[-1] += "-"
            i += 2
        elif dm_name[i] == "-":
            parts.append("")
            i += 1
        else:
            parts[-1] += dm_name[i]
            i += 1
    return "/".join(parts) if len(parts) == 2 and all(parts) else None


def _label(node: dict[str, Any]) -> str | None:
    """An LVM volume's vg/lv, told by its dm uuid (LVM-...), not by the look of its name: a dm device named
    "crypt-home" by cryptsetup keeps its name."""
    dm_name = node.get("dm_name")
    if not dm_name:
        return None
    if node.get("dm_subsystem") == "LVM":
        return lvm_name(str(dm_name)) or str(dm_name)
    return str(dm_name)


def members(nodes: list[dict[str, Any]], top: str) -> list[str]:
    """The devices at the bottom of the stack under `top` (see the module's docstring), in name order."""
    children: dict[str, list[dict[str, Any]]] = {}
    for node in nodes:
        if "parent" in node:
            children.setdefault(node["parent"], []).append(node)
    by_name = {node["name"]: node for node in nodes}

    def leaves(name: str) -> list[str]:
        below = children.get(name, [])
        if by_name[name]["kind"] == "partition":
            # A partition's one child is its whole disk: below it only when that disk is itself a stack (md0p1).
            return [leaf for disk in below if children.get(disk["name"]) for leaf in leaves(disk["name"])] or [name]
        return [leaf for member in below for leaf in leaves(member["name"])] or [name]

    found = leaves(top)
    return [] if found == [top] else sorted(set(found), key=name_order)


def chain_text(nodes: list[dict[str, Any]], label: str | None) -> str:
    """The label (when it says more than the kernel name), then one level of names per arrow."""
    depth: dict[str, int] = {}
    levels: list[list[str]] = []
    for node in nodes:  # parents come before their children
        level = depth[node["parent"]] + 1 if "parent" in node else 0
        depth[node["name"]] = level
        levels += [[] for _ in range(level + 1 - len(levels))]
        levels[level].append(node["name"])
    shown = [label] if label and label != nodes[0]["name"] else []
    return " → ".join(shown + [compact(level) for level in levels])


def compact(names: list[str]) -> str:
    """Names in order, with each run of three or more consecutive ones as first…last: "vdb…vdi", "sda1, sdb1"."""
    ordered = sorted(set(names), key=name_order)
    runs: list[list[str]] = []
    for name in ordered:
        if runs and _consecutive(runs[-1][-1], name):
            runs[-1].append(name)
        else:
            runs.append([name])
    return ", ".join(f"{run[0]}…{run[-1]}" if len(run) >= 3 else ", ".join(run) for run in runs)


def _consecutive(before: str, after: str) -> bool:
    """vdb then vdc (the last letter one on), loop9 then loop10 (the trailing number one on, same prefix)."""
    numbered = re.fullmatch(r"(.*?)(\d+)", before), re.fullmatch(r"(.*?)(\d+)", after)
    if numbered[0] and numbered[1]:
        return numbered[0][1] == numbered[1][1] and int(numbered[1][2]) == int(numbered[0][2]) + 1
    return (
        len(before) == len(after)
        and before[:-1] == after[:-1]
        and before[-1:].isalpha()
        and ord(after[-1]) == ord(before[-1]) + 1
    )


def name_order(name: str) -> tuple[tuple[int, str], ...]:
    """The kernel's order: numbers by value (loop2 before loop10), letters shorter first (sdz before sdaa)."""
    chunks = re.split(r"(\d+)", name)
    return tuple((int(chunk), "") if i % 2 else (len(chunk), chunk) for i, chunk in enumerate(chunks))


def chain_of(environment: dict[str, Any] | None) -> dict[str, Any]:
    """A run's environment's chain dict; {} when its probe did not read one."""
    device = (environment or {}).get("device")
    chain = device.get("chain") if isinstance(device, dict) else None
    return chain if isinstance(chain, dict) else {}


def chain_devices(environment: dict[str, Any] | None) -> list[str]:
    """The kernel names whose /proc/diskstats lines tell what a run did to its device: the target's device, then
    the members under it. A run recorded before the probe read the chain gives its device alone; none without."""
    chain = chain_of(environment)
    if chain.get("top"):
        return [chain["top"], *(name for name in chain.get("members", []) if name != chain["top"])]
    device = (environment or {}).get("device")
    return [device["name"]] if isinstance(device, dict) and device.get("name") else []
