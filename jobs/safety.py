"""Target checks before any write (pure: no Django, no SSH).

`check_script` builds a read-only POSIX sh probe that the caller runs on the target; `judge` reads what
it printed and decides. The probe prints one `key=value` per line between `benchweb_safety=1` and
`end=1`; keys that can occur several times (partition, holder, mount, ...) simply repeat:

    benchweb_safety=1            header; anything printed before it (a login banner) is ignored
    kind=block | directory       writes=yes | no
    target=<path as given>       invalid=<a code of paths.PROBLEMS>   (only for an unusable path, then end)
    user=<login>                 missing_tool=<name>
    realpath=<resolved path>     symlink=yes | no             link=<readlink of the target>
    type=missing | directory | block | character | regular | other
  directory targets:
    writable=yes | no            statfs=<available blocks> <block size>   or   df=<last line of df -Pk>
  block targets, probed only when the run writes:
    readable=yes | no            majmin=<M:m>    sysfs=yes | no    name=<kernel name>   parent=<kernel name>
    ro=0 | 1                     size_sectors=<512-byte sectors>
    partition=<name> <M:m>       holder=<name it holds> <holder name>[ <device-mapper name>]
    mountinfo=yes | no           mount=<M:m> <source> <mountpoint>    (escaped as in /proc/self/mountinfo)
    swaps=yes | no               swap=<M:m> <file name>
    lsblk_rc=<n>                 lsblk=<KNAME TYPE MAJ:MIN MOUNTPOINT>
    blkid_rc=<n>                 blkid=<line of blkid -p -o export, or its error message>
    wipefs_rc=<n>                wipefs=<TYPE OFFSET>   or, from an old wipefs, wipefs_p=<line of wipefs -p>
  identity of a directory target (always; `identity_of` reads it):
    id_findmnt=<findmnt -P UUID SOURCE TARGET FSTYPE of the filesystem it is on>
    id_blkid_uuid=<blkid -p UUID of that source, when it is a block device>    id_fsid=<stat -f %i>
  identity of a block target (always, also for read runs):
    id_lsblk=<lsblk -d -P WWN SERIAL MODEL PARTUUID>     id_size_sectors=<512-byte sectors>
    id_sysfs_wwid=, id_sysfs_serial=, id_sysfs_model=<the same from sysfs, for an lsblk without them>
    id_by_id=</dev/disk/by-id link that resolves to the device>   (one per link)
    id_backing_file=<a loop device's backing file>   id_losetup=<its BACK-INO BACK-MAJ:MIN>
                                                     or id_backing_stat=<stat -L %i %D of it>
    end=1

fio's own allow_mounted_write only compares exact names with /etc/mtab, so the probe matches by
major:minor over the device and all its partitions, resolves symlinks and mapper aliases first, and
also reads holders (LVM, md, dm) and /proc/swaps. blkid and wipefs only ever open the device read-only.
"""

from __future__ import annotations

import re
import shlex
import uuid
from dataclasses import dataclass, field
from typing import Any

from jobs import paths

KINDS = ("directory", "block")
# A device benchweb cannot fully inspect is not safe to overwrite.
REQUIRED_TOOLS = ("lsblk", "blkid", "wipefs")
CANNOT_CHECK = "benchweb refuses to write to a device it cannot check."
TEST_FILE_PREFIX = "benchweb-"
_OWNED_NAME = re.compile(r"benchweb-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(\.[0-9]+)*")

PARTITION_TABLES = set("dos gpt PMBR atari bsd mac sgi sun solaris unixware minix".split())
# Signature names wipefs prints without blkid's USAGE; blkid's USAGE=filesystem catches the rest.
FILESYSTEMS = set(
    "ext2 ext3 ext4 ext4dev jbd xfs btrfs vfat exfat ntfs f2fs jfs reiserfs iso9660 udf squashfs erofs hfs "
    "hfsplus nilfs2 ocfs2 gfs2 zonefs".split()
)

_PRELUDE = r"""PATH=/usr/sbin:/sbin:/usr/bin:/bin:$PATH
export PATH
LC_ALL=C
export LC_ALL
nl=$(printf '\nx')
nl=${nl%x}
# A newline inside a value (a crafted symlink) must not be able to forge a line of the report.
say() {
  case $2 in
    *"$nl"*) printf '%s=%s\n' "$1" "$(printf '%s' "$2" | tr '\n' '?')" ;;
    *) printf '%s=%s\n' "$1" "$2" ;;
  esac
}
have() { command -v "$1" >/dev/null 2>&1; }
say benchweb_safety 1
"""

# Everything below reads; no command here opens the target for writing. $t is the only outside value.
_BODY = r"""say target "$t"
say user "$(id -un 2>/dev/null || id -u)"
majmin_of() {
  if have stat; then
    x=$(stat -L -c '%t %T' -- "$1" 2>/dev/null)
    if [ -n "$x" ]; then
      set -- $x
      printf '%d:%d\n' "0x$1" "0x$2"
      return
    fi
  fi
  ls -lLd -- "$1" 2>/dev/null | awk '{ sub(",", "", $5); print $5 ":" $6 }'
}
holders_of() {
  for h in "$2"/holders/*; do
    [ -e "$h" ] || continue
    hn=${h##*/}
    dn=
    [ -r "/sys/class/block/$hn/dm/name" ] && dn=" $(cat "/sys/class/block/$hn/dm/name")"
    say holder "$1 $hn$dn"
  done
}
r=
if have realpath; then
  r=$(realpath -- "$t" 2>/dev/null)
elif have readlink; then
  r=$(readlink -f -- "$t" 2>/dev/null)
else
  say missing_tool realpath
fi
[ -n "$r" ] || r=$t
say realpath "$r"
if [ -L "$t" ]; then
  say symlink yes
  say link "$(readlink -- "$t" 2>/dev/null || ls -ld -- "$t" 2>/dev/null | sed 's/.* -> //')"
else
  say symlink no
fi
if [ ! -e "$r" ]; then ty=missing
elif [ -b "$r" ]; then ty=block
elif [ -d "$r" ]; then ty=directory
elif [ -c "$r" ]; then ty=character
elif [ -f "$r" ]; then ty=regular
else ty=other
fi
say type "$ty"

if [ "$kind" = directory ] && [ "$ty" = directory ]; then
  if [ -w "$r" ] && [ -x "$r" ]; then say writable yes; else say writable no; fi
  s=
  have stat && s=$(stat -f -c '%a %S' -- "$r" 2>/dev/null)
  if [ -n "$s" ]; then
    say statfs "$s"
  else
    have df && s=$(df -Pk -- "$r" 2>/dev/null | tail -n 1)
    if [ -n "$s" ]; then say df "$s"; else say missing_tool df; fi
  fi
fi

# Identity: what says this is the disk that was registered, read whether or not the run writes.
if [ "$kind" = directory ] && [ "$ty" = directory ]; then
  if have findmnt; then
    say id_findmnt "$(findmnt -n -P -o UUID,SOURCE,TARGET,FSTYPE -T "$r" 2>/dev/null)"
    src=$(findmnt -n -o SOURCE -T "$r" 2>/dev/null)
    src=${src%%\[*}
    [ -b "$src" ] && have blkid && say id_blkid_uuid "$(blkid -p -o value -s UUID -- "$src" 2>/dev/null)"
  fi
  have stat && say id_fsid "$(stat -f -c %i -- "$r" 2>/dev/null)"
fi
if [ "$kind" = block ] && [ "$ty" = block ]; then
  mm=$(majmin_of "$r")
  isys=/sys/dev/block/$mm
  if [ -n "$mm" ] && [ -d "$isys" ]; then
    isys=$(cd -P -- "$isys" && pwd)
    for f in wwid device/wwid; do [ -r "$isys/$f" ] && say id_sysfs_wwid "$(cat "$isys/$f" 2>/dev/null)"; done
    for f in serial device/serial; do [ -r "$isys/$f" ] && say id_sysfs_serial "$(cat "$isys/$f" 2>/dev/null)"; done
    [ -r "$isys/device/model" ] && say id_sysfs_model "$(cat "$isys/device/model" 2>/dev/null)"
    [ -r "$isys/size" ] && say id_size_sectors "$(cat "$isys/size")"
    if [ -r "$isys/loop/backing_file" ]; then
      bf=$(cat "$isys/loop/backing_file" 2>/dev/null)
      say id_backing_file "$bf"
      # The inode losetup reads from the kernel is the file attached, even if its name now points elsewhere.
      if have losetup; then
        say id_losetup "$(losetup -n -l -O BACK-INO,BACK-MAJ:MIN -- "$r" 2>/dev/null)"
      elif have stat; then
        say id_backing_stat "$(stat -L -c '%i %D' -- "$bf" 2>/dev/null)"
      fi
    fi
  fi
  have lsblk && say id_lsblk "$(lsblk -d -n -P -o WWN,SERIAL,MODEL,PARTUUID -- "$r" 2>/dev/null)"
  for l in /dev/disk/by-id/*; do
    [ -L "$l" ] && [ "$l" -ef "$r" ] && say id_by_id "$l"
  done
fi

if [ "$kind" = block ] && [ "$ty" = block ] && [ "$writes" = yes ]; then
  if [ -r "$r" ]; then say readable yes; else say readable no; fi
  mm=$(majmin_of "$r")
  say majmin "$mm"
  devs=$mm
  sys=/sys/dev/block/$mm
  if [ -n "$mm" ] && [ -d "$sys" ]; then
    sys=$(cd -P -- "$sys" && pwd)
    name=${sys##*/}
    say sysfs yes
    say name "$name"
    [ -f "$sys/partition" ] && say parent "$(basename -- "$(dirname -- "$sys")")"
    [ -r "$sys/ro" ] && say ro "$(cat "$sys/ro")"
    [ -r "$sys/size" ] && say size_sectors "$(cat "$sys/size")"
    holders_of "$name" "$sys"
    for p in "$sys"/*/partition; do
      [ -f "$p" ] || continue
      pd=${p%/partition}
      pmm=$(cat "$pd/dev")
      say partition "${pd##*/} $pmm"
      devs="$devs $pmm"
      holders_of "${pd##*/}" "$pd"
    done
  else
    say sysfs no
  fi

  if [ -r /proc/self/mountinfo ]; then
    say mountinfo yes
    while IFS= read -r line; do
      set -f
      set -- $line
      mmi=$3
      mp=$5
      set -- ${line#* - }
      set +f
      src=$2
      hit=
      for d in $devs; do [ "$d" = "$mmi" ] && hit=$mmi; done
      # btrfs and others show an anonymous 0:N in mountinfo: match those by their source device too.
      if [ -z "$hit" ] && [ -b "$src" ]; then
        smm=$(majmin_of "$src")
        for d in $devs; do [ "$d" = "$smm" ] && hit=$smm; done
      fi
      [ -n "$hit" ] && say mount "$hit $src $mp"
    done < /proc/self/mountinfo
  else
    say mountinfo no
  fi

  if [ -r /proc/swaps ]; then
    say swaps yes
    while read -r f rest; do
      [ -b "$f" ] || continue
      smm=$(majmin_of "$f")
      for d in $devs; do [ "$d" = "$smm" ] && say swap "$smm $f"; done
    done < /proc/swaps
  else
    say swaps no
  fi

  if have lsblk; then
    out=$(lsblk -nr -o KNAME,TYPE,MAJ:MIN,MOUNTPOINT -- "$r" 2>&1)
    say lsblk_rc $?
    printf '%s\n' "$out" | while IFS= read -r l; do [ -n "$l" ] && say lsblk "$l"; done
  else
    say missing_tool lsblk
  fi

  if have blkid; then
    out=$(blkid -p -o export -- "$r" 2>&1)
    say blkid_rc $?
    printf '%s\n' "$out" | while IFS= read -r l; do [ -n "$l" ] && say blkid "$l"; done
  else
    say missing_tool blkid
  fi

  if have wipefs; then
    if out=$(wipefs --no-act --noheadings -O TYPE,OFFSET -- "$r" 2>&1); then
      say wipefs_rc 0
      printf '%s\n' "$out" | while IFS= read -r l; do [ -n "$l" ] && say wipefs "$l"; done
    else
      # util-linux before 2.27 has no -O; its parsable -p output names the type last.
      out=$(wipefs --no-act -p -- "$r" 2>&1)
      say wipefs_rc $?
      printf '%s\n' "$out" | while IFS= read -r l; do [ -n "$l" ] && say wipefs_p "$l"; done
    fi
  else
    say missing_tool wipefs
  fi
fi
say end 1
"""


@dataclass(frozen=True)
class Verdict:
    ok: bool
    reasons: list[str] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)
    # What a person should know that does not stop the run (a directory now on another filesystem).
    warnings: list[str] = field(default_factory=list)


def check_script(target_path: str, kind: str, *, writes: bool) -> str:
    """The sh probe for one target; every outside value goes through shlex.quote exactly once."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, not {kind!r}")
    head = _PRELUDE + f"kind={shlex.quote(kind)}\nwrites={'yes' if writes else 'no'}\n"
    head += 'say kind "$kind"\nsay writes "$writes"\n'
    problem = _path_problem(target_path)
    if problem:
        # The report is line-based: a newline in the path would forge lines, so print an escaped copy.
        printable = target_path.encode("unicode_escape").decode("ascii")
        return head + f"say target {shlex.quote(printable)}\nsay invalid {problem}\nsay end 1\n"
    return head + f"t={shlex.quote(target_path)}\n" + _BODY


# What _path_problem finds, as a refusal says it.
_PATH_PROBLEMS = paths.PROBLEMS


def _path_problem(target_path: str) -> str:
    # The one rule for every path sent to a host (jobs/paths.py): the model, the form and the API refuse the
    # same paths; this catches one stored before the rule existed.
    return paths.problem(target_path)


def parse_report(text: str) -> tuple[dict[str, list[str]], bool]:
    """Values by key, in order, and whether the report was complete (header and end marker seen)."""
    values: dict[str, list[str]] = {}
    started = ended = False
    # Only "\n" ends a line, as for sh and printf: str.splitlines() also breaks at U+0085, U+2028 and U+2029,
    # so a value holding one could forge a line of the report.
    for line in text.split("\n"):
        if not started:
            started = line == "benchweb_safety=1"
            continue
        if line == "end=1":
            ended = True
            break
        key, sep, value = line.partition("=")
        if sep:
            values.setdefault(key, []).append(value)
    return values, started and ended


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


# ----------------------------------------------------------------------------------------- identity

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


def _one(values: dict[str, list[str]], key: str) -> str:
    found = values.get(key)
    return found[0] if found else ""


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


def _int(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


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


def _unescape_octal(text: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), text)


def _unescape_hex(text: str) -> str:
    return re.sub(r"\\x([0-9a-fA-F]{2})", lambda m: chr(int(m.group(1), 16)), text)


def _size(n: int) -> str:
    for factor, unit in ((2**40, "TiB"), (2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB")):
        if n >= factor:
            return f"{n / factor:.1f} {unit}"
    return f"{n} bytes"


def test_file_name(run_uuid: str) -> str:
    """The prefix of every file benchweb creates in a directory target, e.g. benchweb-<uuid>.0.0."""
    return TEST_FILE_PREFIX + str(uuid.UUID(str(run_uuid)))


# pytest would otherwise collect it wherever a test module imports it by name.
test_file_name.__test__ = False  # type: ignore[attr-defined]


def is_owned_test_file(name: str) -> bool:
    """Cleanup removes only names test_file_name made, optionally with fio's .<job>.<file> suffixes."""
    return bool(_OWNED_NAME.fullmatch(name))
