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

The modules: `probe.py` sends `probe.sh` (the script, as it runs on the host) and reads its report back,
`verdict.py` judges it, `identity.py` tells whether the target is still the disk registered, and
`owned_files.py` names the test files benchweb may remove from a directory target.
"""

from jobs.safety.identity import IDENTITY_LABELS, describe_identity, identity_changes, identity_of
from jobs.safety.owned_files import TEST_FILE_PREFIX, is_owned_test_file, test_file_name
from jobs.safety.probe import KINDS, check_script, parse_report
from jobs.safety.probe import _path_problem as _path_problem
from jobs.safety.verdict import CANNOT_CHECK, FILESYSTEMS, PARTITION_TABLES, REQUIRED_TOOLS, Verdict, judge

__all__ = [
    "CANNOT_CHECK",
    "FILESYSTEMS",
    "IDENTITY_LABELS",
    "KINDS",
    "PARTITION_TABLES",
    "REQUIRED_TOOLS",
    "TEST_FILE_PREFIX",
    "Verdict",
    "check_script",
    "describe_identity",
    "identity_changes",
    "identity_of",
    "is_owned_test_file",
    "judge",
    "parse_report",
    "test_file_name",
]
