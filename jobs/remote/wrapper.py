"""The wrapper script a run's directory holds (run.sh): it waits for the start time, runs the last check before
the first byte, tunes the block queue, runs the tool under flock and timeout, and records how it ended."""

from __future__ import annotations

import re

from jobs.remote.protocol import LOCK_BUSY_STATUS, Plan, RemoteError, done_marker, int_or_none, q


def wrapper_script(plan: Plan) -> str:
    command = " ".join(q(arg) for arg in plan.argv)
    watchdog = f"timeout -k 30 {int(plan.limit_s)} "
    return f"""#!/bin/sh
# benchweb run {plan.run_uuid}: started detached; see jobs/remote/ for the protocol.
cd {q(plan.run_dir)} || exit 97
echo $$ > pid.tmp && mv pid.tmp pid
refused=
{_wait_until(plan.start_at)}{plan.guard_before}[ -n "$refused" ] || {{
{_tune(plan.tunables)}:
}}
now=$(date +%s.%N 2>/dev/null)
case "$now" in *N*|'') now=$(date +%s);; esac
started=$now
echo "$now" > started
wd=""
command -v timeout >/dev/null 2>&1 && wd={q(watchdog)}
if [ -n "$refused" ]; then
  rc=$refused_status
elif command -v flock >/dev/null 2>&1; then
  flock -n -E {LOCK_BUSY_STATUS} {q(plan.lock_path)} $wd {command} > stdout 2> stderr
  rc=$?
else
  $wd {command} > stdout 2> stderr
  rc=$?
fi
{plan.guard_after}now=$(date +%s.%N 2>/dev/null)
case "$now" in *N*|'') now=$(date +%s);; esac
echo "$now" > finished
printf '%s %s %s %s\\n' "$rc" "$$" "$started" "$now" > ended.tmp && mv ended.tmp ended
echo $rc > status.tmp && mv status.tmp status
: > {q(done_marker(plan.run_dir))}
"""


def _wait_until(start_at: float | None) -> str:
    if start_at is None:
        return ""
    # date +%N is GNU; elsewhere the wait is to the whole second. The wait is capped so a wrong clock
    # on the host cannot park a run for long.
    return f"""now=$(date +%s.%N 2>/dev/null); case "$now" in *N*|'') now=$(date +%s);; esac
delay=$(awk -v t={start_at:.3f} -v n="$now" \\
  'BEGIN {{ d = t - n; if (d < 0) d = 0; if (d > 120) d = 120; printf "%.3f", d }}')
sleep "$delay" 2>/dev/null || sleep "${{delay%.*}}"
"""


_TUNABLE = re.compile(r"/sys/block/[A-Za-z0-9][A-Za-z0-9._-]{0,63}/queue/rq_affinity")


def _tune(tunables: tuple[tuple[str, str], ...]) -> str:
    """The writes of block-queue settings, each to a sysfs file of that one shape; a failed one is noted in
    tuning.log in the run directory and does not stop the run."""
    lines = []
    for path, value in tunables:
        if not _TUNABLE.fullmatch(path) or int_or_none(value) is None:
            raise RemoteError(f"refusing to write {value!r} to {path!r}: not a block queue's rq_affinity")
        lines.append(f"echo {value} > {q(path)} 2>>tuning.log || echo {q('could not write ' + path)} >>tuning.log\n")
    return "".join(lines)
