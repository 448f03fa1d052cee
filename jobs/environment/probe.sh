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
#@ body: the host, then the target's device queue. $t and $kind are the only outside values.
say kernel "$(uname -r 2>/dev/null)"
say kernel_build "$(uname -v 2>/dev/null)"
if [ -r /etc/os-release ]; then
  while IFS= read -r line; do
    case $line in PRETTY_NAME=*) v=${line#PRETTY_NAME=}; v=${v#\"}; say os "${v%\"}" ;; esac
  done < /etc/os-release
fi
have fio && say fio "$(fio --version 2>/dev/null)"
have nproc && say cpus "$(nproc 2>/dev/null)"
[ -r /sys/devices/system/cpu/online ] && say cpus_online "$(cat /sys/devices/system/cpu/online)"
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
  sys=/sys/dev/block/$(printf '%d:%d' "0x$1" "0x$2")
  [ -d "$sys" ] || { say queue_unreadable "no $sys"; return; }
  sys=$(cd -P -- "$sys" && pwd)
  say dev_name "${sys##*/}"
  [ -r "$sys/size" ] && say dev_size_sectors "$(cat "$sys/size")"
  if [ -f "$sys/partition" ]; then
    sys=${sys%/*}
    say dev_partition_of "${sys##*/}"
  fi
  [ -r "$sys/dm/name" ] && say dev_dm_name "$(cat "$sys/dm/name")"
  say dev_queue_name "${sys##*/}"
  [ -r "$sys/device/model" ] && say dev_model "$(cat "$sys/device/model")"
  for f in scheduler nr_requests rq_affinity read_ahead_kb rotational; do
    [ -r "$sys/queue/$f" ] && say "dev_$f" "$(cat "$sys/queue/$f")"
  done
  if [ -w "$sys/queue/rq_affinity" ]; then say dev_rq_affinity_writable yes; else say dev_rq_affinity_writable no; fi
  n=0
  for q in "$sys"/mq/*; do
    [ -r "$q/cpu_list" ] || continue
    n=$((n+1))
    say dev_queue_cpus "${q##*/}:$(cat "$q/cpu_list")"
  done
  say dev_queues "$n"
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
