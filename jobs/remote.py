"""The detached-run protocol on a target host: launch, poll, collect, cancel, clean up.

A run lives in its own directory on the target, keyed by the run's UUID:

    run.sh        the wrapper benchweb uploads; started under setsid, so it leads its own session
    job.fio       the job file (fio runs only)
    launched/     made with mkdir, which is atomic: the second launch of a UUID finds it and does nothing
    pid           the wrapper's pid (= the session id of everything the run started)
    stdout, stderr, result.json    what the tool wrote
    status        the tool's exit status, written last via rename, so its presence means "finished"

No worker waits for a run: each call here is one short SSH command, and a worker killed between calls
loses nothing, because the next poll reads the same files. `flock -n` on a per-target lock file keeps
two benchmarks off one target even if the database were wrong, and `timeout` kills a runaway on the
target when no worker is left to cancel it.
"""

from __future__ import annotations

import hashlib
import re
import shlex
from dataclasses import dataclass

from jobs.ssh import Connection, SSHError

# flock's exit status when the lock is held (-E); chosen outside the tools' own statuses.
LOCK_BUSY_STATUS = 75
# timeout(1) exits 124 when it had to stop the command.
WATCHDOG_STATUS = 124
DEFAULT_BASE = "~/.benchweb/runs"
TAIL_BYTES = 256 * 1024
q = shlex.quote


class RemoteError(Exception):
    """The target answered in a way the protocol does not expect."""


@dataclass(frozen=True)
class Plan:
    run_uuid: str
    run_dir: str
    lock_path: str
    argv: list[str]
    limit_s: int
    files: dict[str, bytes]
    # Epoch seconds the tool should start at: runs are claimed and launched a little early, and the
    # wrapper waits on the host, so the start does not depend on how long SSH and the preflight took.
    start_at: float | None = None


@dataclass(frozen=True)
class PollResult:
    state: str  # running | starting | finished | dead | vanished | unlaunched
    exit_status: int | None
    tail: str
    pid: int | None
    started_epoch: float | None


def base_expression(base: str) -> str:
    """The run directory base as a shell expression; a leading ~ means the login user's home on the target."""
    base = base or DEFAULT_BASE
    if base == "~":
        return '"$HOME"'
    if base.startswith("~/"):
        return '"$HOME"/' + q(base[2:].rstrip("/"))
    if base.startswith("/"):
        return q(base.rstrip("/") or "/")
    raise RemoteError(
        f"the run directory base must be absolute or start with ~/ (got {base!r}); fix it on the host page"
    )


@dataclass(frozen=True)
class Preflight:
    base: str
    run_dir: str
    launched: bool
    tool_status: int | None
    tool_output: str
    safety_report: str


def preflight(conn: Connection, base: str, run_uuid: str, tool_check: str, safety_script: str) -> Preflight:
    """One round trip before a launch: make the run directory, say whether this UUID was already launched,
    check the tool, and run the read-only safety probe (every shell start costs ~0.1-0.3 s on a busy host)."""
    script = f"""base={base_expression(base)}
case "$base" in /*) ;; *) echo "benchweb_error=the login user's home is not an absolute path ($base)"; exit 0;; esac
d="$base"/{q(run_uuid)}
if ! mkdir -p "$d" "$base/../locks" 2>/dev/null; then echo "benchweb_error=cannot create $d"; exit 0; fi
echo "benchweb_base=$base"
echo "benchweb_run_dir=$d"
if [ -d "$d/launched" ]; then echo benchweb_launched=yes; else echo benchweb_launched=no; fi
echo ---benchweb-tool---
( {tool_check} ) 2>&1
echo "---benchweb-tool-status=$?---"
(
{safety_script}
)
"""
    out = conn.run(script, timeout=120).stdout.decode(errors="replace")
    head, _, rest = out.partition("---benchweb-tool---\n")
    facts = dict(line.split("=", 1) for line in head.splitlines() if line.startswith("benchweb_") and "=" in line)
    if "benchweb_error" in facts:
        raise RemoteError(facts["benchweb_error"])
    if "benchweb_run_dir" not in facts:
        raise RemoteError(f"the preflight on the host answered {out[:300]!r}")
    tool_output, marker, safety_report = rest.partition("---benchweb-tool-status=")
    status, _, safety_report = safety_report.partition("---\n")
    return Preflight(
        base=facts["benchweb_base"],
        run_dir=facts["benchweb_run_dir"],
        launched=facts.get("benchweb_launched") == "yes",
        tool_status=_int_or_none(status) if marker else None,
        tool_output=tool_output,
        safety_report=safety_report,
    )


def lock_path_for(base: str, target_path: str) -> str:
    digest = hashlib.sha256(target_path.encode()).hexdigest()[:16]
    return f"{base}/../locks/{digest}.lock"


def wrapper_script(plan: Plan) -> str:
    command = " ".join(q(arg) for arg in plan.argv)
    watchdog = f"timeout -k 30 {int(plan.limit_s)} "
    return f"""#!/bin/sh
# benchweb run {plan.run_uuid}: started detached; see jobs/remote.py for the protocol.
cd {q(plan.run_dir)} || exit 97
echo $$ > pid.tmp && mv pid.tmp pid
{_wait_until(plan.start_at)}now=$(date +%s.%N 2>/dev/null)
case "$now" in *N*|'') now=$(date +%s);; esac
echo "$now" > started
wd=""
command -v timeout >/dev/null 2>&1 && wd={q(watchdog)}
if command -v flock >/dev/null 2>&1; then
  flock -n -E {LOCK_BUSY_STATUS} {q(plan.lock_path)} $wd {command} > stdout 2> stderr
else
  $wd {command} > stdout 2> stderr
fi
echo $? > status.tmp && mv status.tmp status
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


def launch(conn: Connection, plan: Plan) -> bool:
    """Upload the files (SFTP starts no shell) and start the run detached; False when this UUID was already
    launched: the atomic mkdir makes a second launch a no-op, never a second benchmark."""
    for name, data in plan.files.items():
        conn.put_file(f"{plan.run_dir}/{name}", data, mode=0o700 if name.endswith(".sh") else 0o600)
    result = conn.run(
        f"cd {q(plan.run_dir)} && if mkdir launched 2>/dev/null; then "
        f"setsid sh run.sh </dev/null >wrapper.log 2>&1 & echo started; else echo already; fi",
        timeout=30,
    )
    answer = result.stdout.decode().strip()
    if answer not in {"started", "already"}:
        raise RemoteError(f"launch on the host answered {answer!r} (stderr: {result.stderr.decode()[:300]})")
    return answer == "started"


def poll(conn: Connection, run_dir: str, tail_file: str, *, wait_s: float = 0) -> PollResult:
    """Read the run's state. With wait_s, first wait on the host (up to that long) for it to finish:
    near a run's expected end this notices the finish within 0.1 s instead of a poll interval later."""
    d = q(run_dir)
    tenths = max(0, min(100, int(wait_s * 10)))
    script = f"""d={d}
if [ ! -d "$d" ]; then echo state=vanished; exit 0; fi
i=0; while [ $i -lt {tenths} ] && [ ! -f "$d/status" ]; do sleep 0.1; i=$((i+1)); done
pid=$(cat "$d/pid" 2>/dev/null)
echo pid=$pid
echo started=$(cat "$d/started" 2>/dev/null)
if [ -f "$d/status" ]; then echo state=finished; echo exit=$(cat "$d/status")
elif [ -n "$pid" ] && ps -p "$pid" -o args= 2>/dev/null | grep -q run.sh; then echo state=running
elif [ -d "$d/launched" ] && [ -z "$pid" ]; then echo state=starting
elif [ -d "$d/launched" ]; then echo state=dead
else echo state=unlaunched; fi
echo ---tail---
tail -c {TAIL_BYTES} "$d/{tail_file}" 2>/dev/null || true
"""
    out = conn.run(script, timeout=60 + wait_s).stdout.decode(errors="replace")
    head, _, tail = out.partition("---tail---\n")
    facts = dict(line.split("=", 1) for line in head.splitlines() if "=" in line)
    state = facts.get("state", "")
    if state not in {"running", "starting", "finished", "dead", "vanished", "unlaunched"}:
        raise RemoteError(f"poll on the host answered {head[:300]!r}")
    return PollResult(
        state=state,
        exit_status=_int_or_none(facts.get("exit")),
        tail=tail,
        pid=_int_or_none(facts.get("pid")),
        started_epoch=_float_or_none(facts.get("started")),
    )


def read_file(conn: Connection, path: str) -> bytes:
    try:
        return conn.get_file(path) if conn.exists(path) else b""
    except SSHError:
        raise
    except OSError as exc:
        raise RemoteError(f"could not read {path} on the host: {exc}") from exc


def cancel(conn: Connection, run_dir: str) -> None:
    """Stop everything the run started: its whole session (the watchdog puts fio in a group of its own)."""
    d = q(run_dir)
    conn.run(
        f"""pid=$(cat {d}/pid 2>/dev/null) || exit 0
case "$pid" in ''|*[!0-9]*) exit 0;; esac
ps -p "$pid" -o args= 2>/dev/null | grep -q run.sh || exit 0
pkill -TERM -s "$pid" 2>/dev/null || kill -TERM -- -"$pid" 2>/dev/null
i=0; while [ $i -lt 20 ] && pgrep -s "$pid" >/dev/null 2>&1; do sleep 0.5; i=$((i+1)); done
pkill -KILL -s "$pid" 2>/dev/null || true
""",
        timeout=60,
    )


def cleanup(conn: Connection, run_dir: str, test_files_glob: str | None) -> None:
    """Remove the run directory and, for directory targets, the run's own test files."""
    parts = [f"rm -rf {q(run_dir)}"]
    if test_files_glob:
        directory, _, pattern = test_files_glob.rpartition("/")
        if not re.fullmatch(r"benchweb-[0-9a-f-]{36}[*]?", pattern):
            raise RemoteError(f"refusing to remove files that are not benchweb's own: {test_files_glob!r}")
        parts.append(f"rm -f {q(directory)}/{pattern}")
    conn.run(" ; ".join(parts), timeout=120)


def _float_or_none(value: str | None) -> float | None:
    try:
        return float(value) if value not in (None, "") else None
    except ValueError:
        return None


def _int_or_none(value: str | None) -> int | None:
    try:
        return int(value) if value not in (None, "") else None
    except ValueError:
        return None
