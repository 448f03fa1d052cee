"""The last check, at the first byte (pure): what the run's wrapper does on the host just before the tool opens
the target for writing, and what its answer means.

The verdict (jobs/safety/verdict.py) is reached when a run is claimed, from the preflight's probe; a scheduled run
then waits on the host for its start second. Whatever happens in that window (another image attached to the loop
device, `mkfs`, `mount`) must not be written over. So the wrapper of every write run, after its wait:

1. on a block device, takes an exclusive claim on it: a small holder opens it with O_EXCL and keeps it open until
   the tool has ended. Linux lets one opener at a time claim a block device so: `mount`, `mkfs`, `mkswap` and
   device-mapper or md assembly then fail with "device busy", a loop device cannot be re-attached (a detach is
   put off until the claim ends), while the tool's own plain opens still work. The holder is perl or python3,
   whichever the host has first (one of them is on nearly every Linux; a host with neither is refused, saying
   so). A claim that fails (the device is mounted, or another program holds it) refuses the run;
2. under the claim, runs the same read-only probe again and compares its report with the one the verdict was
   reached on, line by line (free space apart). Any other difference refuses the run: a different identity,
   a new filesystem signature, partition, holder, mount or swap. On a block device it also checks that the
   device the path names now is the one claimed;
3. only then starts the tool, and releases the claim once the tool has ended, before it writes its status: the
   next run on the disk can take its own claim straight away.

A refused run's wrapper starts no tool and exits with REFUSED_STATUS, leaving `guard.refused` (why) and
`guard.seen` (the new report) beside `guard.expected` (the verdict's) for the collection to explain.
"""

from __future__ import annotations

import shlex

from jobs.safety.probe import check_script, parse_report
from jobs.safety.verdict import Verdict, judge

# The wrapper's exit status when the first-byte check refused the run; outside the tools' own statuses and
# beside the lock's (75).
REFUSED_STATUS = 76

# Report lines that change without the target changing: a directory's free space.
_VOLATILE_KEYS = ("statfs", "df")

# How long the wrapper waits for the holder to say whether it holds the device, in tenths of a second.
_CLAIM_WAIT_TENTHS = 300

# The holders: each opens the device O_EXCL, prints "held <major>:<minor>" of what it opened (or "busy <why>"),
# then keeps it open until its standard input ends. Neither text may hold a single quote (sent inside one).
_PERL_HOLDER = (
    "use Fcntl; $| = 1;"
    ' sysopen(my $d, $ARGV[0], O_RDONLY | O_EXCL) or do { print "busy $!\\n"; exit 1 };'
    " my $r = (stat $d)[6];"
    ' printf "held %d:%d\\n", (($r >> 8) & 0xfff) | (($r >> 32) & ~0xfff), ($r & 0xff) | (($r >> 12) & ~0xff);'
    " 1 while sysread(STDIN, my $b, 512);"
)
_PYTHON_HOLDER = """import os, sys
try:
    d = os.open(sys.argv[1], os.O_RDONLY | os.O_EXCL)
except OSError as e:
    print("busy", e.strerror, flush=True)
    sys.exit(1)
r = os.fstat(d).st_rdev
print("held %d:%d" % (os.major(r), os.minor(r)), flush=True)
while os.read(0, 512):
    pass
"""


def files(target_path: str, kind: str, report: str) -> dict[str, bytes]:
    """The files the check reads on the host: the probe as the preflight ran it, and the report it gave then."""
    return {"guard.sh": check_script(target_path, kind, writes=True).encode(), "guard.expected": report.encode()}


def before_tool(target_path: str, kind: str) -> str:
    """The wrapper's lines before the tool starts: they set `refused` to why the run must not start, or leave it
    empty; on a block device the holder's pid is in `holder` and its claim lives as long as descriptor 9."""
    claim = _claim(target_path) if kind == "block" else ""
    return f"""refused=
refused_status={REFUSED_STATUS}
holder=
rm -f guard.claim guard.seen guard.refused
{claim}if [ -z "$refused" ]; then
{_compare()}fi
[ -z "$refused" ] || printf '%s\\n' "$refused" >guard.refused
"""


def _compare() -> str:
    """The probe run again and its report compared with the verdict's: `refused` set to why they differ. On a block
    device (`holder` set) the path must still name the device claimed (`claimed`: the holder's "held maj:min")."""
    return f"""  sh guard.sh >guard.seen 2>guard.err
  seen=$(sed -n '/^benchweb_safety=1$/,/^end=1$/p' guard.seen | grep -v -E {shlex.quote(_volatile())})
  expected=$(sed -n '/^benchweb_safety=1$/,/^end=1$/p' guard.expected | grep -v -E {shlex.quote(_volatile())})
  if [ -z "$seen" ]; then refused="the probe printed no report (see guard.err)"
  elif [ "$seen" != "$expected" ]; then refused=changed
  elif [ -n "$holder" ] && ! printf '%s\\n' "$seen" | grep -qxF "majmin=${{claimed#held }}"; then
    refused="the path now names another device than the one claimed"
  fi
"""


def at_first_byte(kind: str) -> str:
    """The same check again as fio's `exec_prerun`, for a member of a group run by fio's client/server mode: its
    wrapper checked (and claimed the device) when it started fio's server, but the first byte comes only when the
    group's client sends the job, seconds later. fio runs the prerun in each job's process once its files are set up
    and right before its first I/O, and a prerun that fails ends that job unstarted. The job's processes start
    together: one checks (under a lock: a directory made atomically) and the others within the same second take its
    answer; a later job (after a stonewall) checks again. A refusal is written where the wrapper's would be."""
    holder = "holder=yes\nclaimed=$(head -n 1 guard.claim 2>/dev/null)\n" if kind == "block" else "holder=\n"
    return f"""#!/bin/sh
# benchweb: the last check before the first byte, run by fio's server as the job's exec_prerun (jobs/safety/guard.py).
cd "$(dirname "$0")" || exit {REFUSED_STATUS}
i=0
until mkdir guard.last.lock 2>/dev/null; do
  i=$((i+1))
  if [ $i -ge {_CLAIM_WAIT_TENTHS * 2} ]; then
    echo "the last check before the first byte could not take its lock within 60 s" >guard.refused
    exit {REFUSED_STATUS}
  fi
  sleep 0.1
done
trap 'rmdir guard.last.lock 2>/dev/null' EXIT
[ ! -s guard.refused ] || exit {REFUSED_STATUS}
now=$(date +%s)
last=$(cat guard.last 2>/dev/null)
case "$last" in
  ok\\ [0-9]*) [ $((now - ${{last#ok }})) -gt 1 ] || exit 0;;
esac
refused=
{holder}{_compare()}if [ -n "$refused" ]; then
  printf '%s\\n' "$refused" >guard.refused
  exit {REFUSED_STATUS}
fi
echo "ok $now" >guard.last
exit 0
"""


def after_tool() -> str:
    """The wrapper's lines once the tool has ended: the claim ends (the holder sees its input close), waited for
    up to 5 s, so that the next run on the disk finds it free; a holder still there then is stopped."""
    return """if [ -n "$holder" ]; then
  exec 9>&-
  i=0; while [ $i -lt 50 ] && kill -0 "$holder" 2>/dev/null; do sleep 0.1; i=$((i+1)); done
  kill "$holder" 2>/dev/null
fi
"""


def _volatile() -> str:
    return "^(" + "|".join(_VOLATILE_KEYS) + ")="


def _claim(target_path: str) -> str:
    device = shlex.quote(target_path)
    return f"""if ! mkfifo guard.hold 2>/dev/null; then
  refused="could not make the claim's pipe in the run directory"
else
  exec 9<>guard.hold
  if command -v perl >/dev/null 2>&1; then
    perl -e {shlex.quote(_PERL_HOLDER)} -- {device} 9>&- <guard.hold >guard.claim 2>guard.claim.err &
    holder=$!
  elif command -v python3 >/dev/null 2>&1; then
    python3 -c {shlex.quote(_PYTHON_HOLDER)} {device} 9>&- <guard.hold >guard.claim 2>guard.claim.err &
    holder=$!
  else
    refused=no-holder
  fi
fi
claimed=
if [ -n "$holder" ]; then
  i=0
  while [ $i -lt {_CLAIM_WAIT_TENTHS} ]; do
    claimed=$(head -n 1 guard.claim 2>/dev/null)
    case "$claimed" in held\\ *:*|busy\\ *) break;; esac
    kill -0 "$holder" 2>/dev/null || {{ claimed=$(head -n 1 guard.claim 2>/dev/null); break; }}
    sleep 0.1; i=$((i+1))
  done
  case "$claimed" in
    held\\ *:*) ;;
    busy\\ *) refused="busy: ${{claimed#busy }}";;
    *) refused="the holder that claims the device did not answer: $claimed $(head -c 300 guard.claim.err)";;
  esac
fi
"""


def explanation(refused: str, expected: str, seen: str, *, kind: str, allow_destructive: bool,
                recorded_identity: dict[str, object] | None) -> tuple[str, Verdict | None]:  # fmt: skip
    """What the wrapper's refusal means, for the run's page: the reasons the verdict gives now, and the report
    lines that changed since the verdict; and, for a changed target, that verdict (the caller audits a different
    disk from it)."""
    refused = refused.strip()
    if refused == "no-holder":
        return (
            "the host has neither perl nor python3, one of which benchweb needs to hold the device exclusively while "
            "the run writes (so that nothing can mount or format it meanwhile); install perl or python3 on the host"
        ), None
    if refused.startswith("busy: "):
        return (
            f"the device is in use: it could not be opened exclusively ({refused[6:]}): it is mounted, or a program "
            "holds it (a filesystem being made, a device-mapper or md array, swap)"
        ), None
    if refused != "changed":
        return refused, None
    verdict = judge(seen, kind=kind, writes=True, allow_destructive=allow_destructive, needed_bytes=None,
                    recorded_identity=recorded_identity)  # fmt: skip
    changed = _changed_lines(expected, seen)
    reasons = " ".join(verdict.reasons) if not verdict.ok else ""
    why = (
        "the target changed since the run was checked"
        + (f": {reasons}" if reasons else "")
        + (f" (changed on the host: {'; '.join(changed)})" if changed else "")
    )
    return why, verdict


def _changed_lines(expected: str, seen: str, *, limit: int = 8) -> list[str]:
    """The report's lines that differ, as `key: before -> now`, free space apart."""
    before, _ = parse_report(expected)
    now, _ = parse_report(seen)
    lines = []
    for key in sorted(set(before) | set(now)):
        if key in _VOLATILE_KEYS or before.get(key) == now.get(key):
            continue
        was = ", ".join(before.get(key, [])) or "(none)"
        is_now = ", ".join(now.get(key, [])) or "(none)"
        lines.append(f"{key}: {was} -> {is_now}")
    return lines[:limit]
