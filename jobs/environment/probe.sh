#!/bin/sh
# The read-only environment probe benchweb runs on a target's host before a run, in the same exchange as the
# preflight (jobs/environment/probe.py sends it and reads its report back). Not run as it stands: probe_script()
# sends the prelude, then sets kind and t, the target path (each through shlex.quote exactly once), then the
# body, then the cloud part only for a host whose cloud_metadata switch is on. The lines that start with "#@"
# mark the parts and are never sent. Nothing here writes: every command reads /proc, /sys or prints a version.
#@ prelude: PATH and locale, the say and have helpers, the report's header
PATH=/usr/sbin:/sbin:/usr/bin:/bin:$PATH
export PATH
LC_ALL=C
export LC_ALL
nl=$(printf '\nx')
nl=${nl%x}
# A newline inside a value (a crafted model string, a mount option) must not be able to forge a line.
say() {
  case $2 in
    *"$nl"*) printf '%s=%s\n' "$1" "$(printf '%s' "$2" | tr '\n' '?')" ;;
    *) printf '%s=%s\n' "$1" "$2" ;;
  esac
}
have() { command -v "$1" >/dev/null 2>&1; }
say benchweb_environment 1
#@ body: the host, then the target's device queue and chain. $t and $kind are the only outside values.
# Where sysfs is read from: always /sys on a host. Only the tests replace this one line, to read a tree built from
# the kernel's documented layout on a kernel without device-mapper or md; nothing on a host can change it.
sysfs=/sys
# The first line of a small file (sysfs, /proc) in $got, read by the shell itself: "$(cat ...)" starts a process for
# each file, and a host's device with many queues has many files. Always true; an unreadable file leaves $got empty.
got_line() { got=; IFS= read -r got < "$1" || :; } 2>/dev/null
# Linux says in /proc what uname says (AIX has no /proc: uname there).
got=
[ -r /proc/sys/kernel/osrelease ] && got_line /proc/sys/kernel/osrelease
if [ -n "$got" ]; then say kernel "$got"; else say kernel "$(uname -r 2>/dev/null)"; fi
got=
[ -r /proc/sys/kernel/version ] && got_line /proc/sys/kernel/version
if [ -n "$got" ]; then say kernel_build "$got"; else say kernel_build "$(uname -v 2>/dev/null)"; fi
if [ -r /etc/os-release ]; then
  while IFS= read -r line; do
    case $line in PRETTY_NAME=*) v=${line#PRETTY_NAME=}; v=${v#\"}; say os "${v%\"}" ;; esac
  done < /etc/os-release
fi
# In a launch's preflight the tool check has just printed fio's version (tool_said, jobs/remote/launching.py): that,
# rather than fio started a second time.
case ${tool_said-} in
  fio-*) say fio "$tool_said" ;;
  *) have fio && say fio "$(fio --version 2>/dev/null)" ;;
esac
have nproc && say cpus "$(nproc 2>/dev/null)"
[ -r /sys/devices/system/cpu/online ] && got_line /sys/devices/system/cpu/online && say cpus_online "$got"
if [ -r /proc/cpuinfo ]; then
  while IFS= read -r line; do
    case $line in "model name"*) say cpu_model "${line#*: }"; break ;; esac
  done < /proc/cpuinfo
fi
if [ -r /proc/meminfo ]; then
  while read -r k v rest; do
    [ "$k" = MemTotal: ] && { say mem_total_kb "$v"; break; }
  done < /proc/meminfo
fi
# The queue facts of one block device, by path: the kernel name, and for a partition its parent's queue.
queue_facts() {
  x=
  have stat && x=$(stat -L -c '%t %T' -- "$1" 2>/dev/null)
  [ -n "$x" ] || { say queue_unreadable "no major:minor for $1"; return; }
  set -- $x
  sys=$sysfs/dev/block/$(printf '%d:%d' "0x$1" "0x$2")
  [ -d "$sys" ] || { say queue_unreadable "no $sys"; return; }
  sys=$(cd -P -- "$sys" && pwd)
  top=${sys##*/}
  say dev_name "$top"
  [ -r "$sys/size" ] && got_line "$sys/size" && say dev_size_sectors "$got"
  if [ -f "$sys/partition" ]; then
    sys=${sys%/*}
    say dev_partition_of "${sys##*/}"
  fi
  [ -r "$sys/dm/name" ] && got_line "$sys/dm/name" && say dev_dm_name "$got"
  say dev_queue_name "${sys##*/}"
  [ -r "$sys/device/model" ] && got_line "$sys/device/model" && say dev_model "$got"
  for f in scheduler nr_requests rq_affinity read_ahead_kb rotational; do
    [ -r "$sys/queue/$f" ] && got_line "$sys/queue/$f" && say "dev_$f" "$got"
  done
  if [ -w "$sys/queue/rq_affinity" ]; then say dev_rq_affinity_writable yes; else say dev_rq_affinity_writable no; fi
  n=0
  for q in "$sys"/mq/*; do
    [ -r "$q/cpu_list" ] || continue
    n=$((n+1))
    got_line "$q/cpu_list"
    say dev_queue_cpus "${q##*/}:$got"
  done
  say dev_queues "$n"
  device_chain "$top"
}
# The devices under the target's device, each once: a partition's whole disk, and what a device-mapper or md
# device is made of (its slaves/, recursively: dm on md on partitions). One chain_node line per device,
# "<name> <kind> <the device it was reached from, - for the top>", then its dm name, the subsystem its dm uuid
# starts with (LVM, CRYPT, mpath...) or its md level. Kernel names are checked before they are kept, so the list
# of devices still to read splits only where it should; at most 64 devices, 8 levels below the top.
chain_keep() {
  case $1 in
    "" | *[!A-Za-z0-9._+!:-]*) say chain_truncated "a device under $2 has a name benchweb does not read" ;;
    *)
      if [ "$3" -le 8 ]; then c_todo="$c_todo $1 $2 $3"
      else say chain_truncated "more than 8 levels: what $2 is made of"
      fi ;;
  esac
}
device_chain() {
  c_todo= c_seen=' ' c_count=0
  say chain_top "$1"
  chain_keep "$1" - 0
  while [ -n "$c_todo" ]; do
    set -- $c_todo
    c_name=$1 c_from=$2 c_depth=$3
    shift 3
    c_todo=$*
    case $c_seen in *" $c_name "*) continue ;; esac
    c_seen="$c_seen$c_name "
    c_count=$((c_count+1))
    [ "$c_count" -le 64 ] || { say chain_truncated "more than 64 devices"; break; }
    c_sys=$sysfs/class/block/$c_name
    [ -d "$c_sys" ] || { say chain_truncated "no $c_sys"; continue; }
    c_kind=disk
    if [ -f "$c_sys/partition" ]; then c_kind=partition
    elif [ -d "$c_sys/dm" ]; then c_kind=dm
    elif [ -d "$c_sys/md" ]; then c_kind=md
    elif [ -d "$c_sys/loop" ]; then c_kind=loop
    fi
    say chain_node "$c_name $c_kind $c_from"
    [ -r "$c_sys/dm/name" ] && got_line "$c_sys/dm/name" && say chain_dm_name "$c_name $got"
    if [ -r "$c_sys/dm/uuid" ]; then
      got_line "$c_sys/dm/uuid"
      c_uuid=$got
      [ -n "$c_uuid" ] && say chain_dm_subsystem "$c_name ${c_uuid%%-*}"
    fi
    [ -r "$c_sys/md/level" ] && got_line "$c_sys/md/level" && say chain_md_level "$c_name $got"
    if [ "$c_kind" = partition ]; then
      c_disk=$(cd -P -- "$c_sys/.." && pwd)
      chain_keep "${c_disk##*/}" "$c_name" $((c_depth+1))
    fi
    for c_member in "$c_sys"/slaves/*; do
      [ -e "$c_member" ] && chain_keep "${c_member##*/}" "$c_name" $((c_depth+1))
    done
  done
}
r=$t
if have realpath; then r=$(realpath -- "$t" 2>/dev/null) || r=$t
elif have readlink; then r=$(readlink -f -- "$t" 2>/dev/null) || r=$t
fi
say target "$r"
if [ "$kind" = block ] && [ -b "$r" ]; then
  queue_facts "$r"
elif [ "$kind" = directory ] && [ -d "$r" ] && have findmnt; then
  # -r escapes blanks and other special characters as \xNN, so the four fields split only at spaces.
  say fs "$(findmnt -n -r -o FSTYPE,SOURCE,TARGET,OPTIONS -T "$r" 2>/dev/null)"
  src=$(findmnt -n -o SOURCE -T "$r" 2>/dev/null)
  src=${src%%\[*}
  if [ -b "$src" ]; then queue_facts "$src"; else say queue_unreadable "the filesystem's source is not a block device"; fi
fi
#@ cloud: only for a host whose cloud_metadata switch is on; each ask gives up after 1 s.
if have curl; then
  v=$(curl -fsS -m 1 http://169.254.169.254/latest/meta-data/instance-type 2>/dev/null) && say instance_type "$v"
  [ -n "$v" ] || { v=$(curl -fsS -m 1 http://100.100.100.200/latest/meta-data/instance/instance-type 2>/dev/null) && say instance_type "$v"; }
fi
