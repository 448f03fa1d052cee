#!/bin/sh
# The read-only safety probe benchweb runs on a target's host before a run (jobs/safety/probe.py sends it;
# jobs/safety/__init__.py describes the report it prints). Not run as it stands: check_script() sends the
# prelude, then sets and says kind and writes, then sets t, the target path (each value through shlex.quote
# exactly once), then sends the body. The lines that start with "#@" mark the parts and are never sent.
#@ prelude: PATH and locale, the say and have helpers, the report's header
PATH=/usr/sbin:/sbin:/usr/bin:/bin:$PATH
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
#@ body: everything below reads; no command here opens the target for writing. $t is the only outside value.
say target "$t"
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
