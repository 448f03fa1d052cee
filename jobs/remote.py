"""The detached-run protocol on a target host: launch, poll, collect, cancel, clean up.

A run lives in its own directory on the target, keyed by the run's UUID:

    run.sh        the wrapper benchweb uploads; started under setsid, so it leads its own session
    job.fio       the job file (fio runs only)
    launched/     made with mkdir, which is atomic: the second launch of a UUID finds it and does nothing
    pid           the wrapper's pid (= the session id of everything the run started)
    stdout, stderr, result.json    what the tool wrote
    finished      when the tool ended (epoch seconds, host clock)
    ended         "<exit status> <pid> <started> <finished>", written via rename just before `status`: what a
                  collection reads, in one file
    status        the tool's exit status, written via rename, so its presence means "finished"
    guard.*       a write run's last check before the first byte (jobs/safety/guard.py)
    <base>/done/<uuid>   an empty marker written after `status`: one listing of that directory tells the
                  host's observation step every run there that finished

No worker waits for a run: each call here is one short exchange over the worker's session to the host, and a
worker killed between calls loses nothing, because the next look reads the same files. Looking at a running
run (`finished_runs`, `sighting`, `read_output`, `look`, `final_state`) only reads files and lists one
directory over SFTP: it starts no shell and no process on the host. `flock -n` on a per-target lock file keeps
two benchmarks off one target even if the database were wrong, and `timeout` kills a runaway on the
target when no worker is left to cancel it.

Paths are data, never text to re-parse. Every path sent passes jobs/paths.py first; the run directory is
computed here as <base>/<uuid>, the host only confirms the base it resolved; and every answer is a marker
and then fields that each end with a NUL byte, which no shell value can hold, so no value (a path, a file
the run wrote, the tail of its output) can end a field early or forge another. The clean-up removes only
<base>/<uuid>, compared first, in the same command, with the base as the host resolves it.
"""

from __future__ import annotations

import hashlib
import re
import shlex
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING

from jobs import paths

if TYPE_CHECKING:  # the models import this module's constants; paramiko is loaded where a session is opened
    from jobs.ssh import Connection

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
    # Block-queue settings the wrapper writes just before the tool starts, (sysfs path, value): a pinned profile on
    # a host marked tunable (jobs/environment/pinning.py).
    tunables: tuple[tuple[str, str], ...] = ()
    # The last check before the first byte of a write (jobs/safety/guard.py): sh lines that run after the wait and
    # set `refused` (and `refused_status`) when the tool must not start, and lines that run once the tool ended.
    guard_before: str = ""
    guard_after: str = ""


@dataclass(frozen=True)
class PollResult:
    state: str  # running | starting | finished | dead | vanished | unlaunched
    exit_status: int | None
    tail: str
    pid: int | None
    started_epoch: float | None
    finished_epoch: float | None = None  # when the tool ended, by the host's clock (wrappers since issue 14)


def base_expression(base: str) -> str:
    """The run directory base as a shell expression; a leading ~ means the login user's home on the target."""
    in_home, rest = _split_base(base)
    if in_home:
        return '"$HOME"' + (f"/{q(rest)}" if rest else "")
    return q(rest)


def resolved_base(base: str, home: str) -> str:
    """What base_expression(base) is on a host whose login user's home is `home`: the same string operations."""
    in_home, rest = _split_base(base)
    if not in_home:
        return rest
    return home + (f"/{rest}" if rest else "")


def run_dir_for(resolved: str, run_uuid: str) -> str:
    return f"{resolved}/{_checked_uuid(run_uuid)}"


def _split_base(base: str) -> tuple[bool, str]:
    """(whether the base is in the login user's home, the rest of it without trailing slashes)."""
    base = base or DEFAULT_BASE
    try:
        paths.check(base, field="run directory", home=True)
    except paths.PathError as exc:
        raise RemoteError(f"{exc} Fix it on the host page; nothing was sent to the host.") from exc
    if base == "~" or base.startswith("~/"):
        return True, base[2:].rstrip("/")
    return False, base.rstrip("/") or "/"


def _checked_uuid(run_uuid: str) -> str:
    try:
        if str(uuid.UUID(run_uuid)) == run_uuid:
            return run_uuid
    except ValueError:
        pass
    raise RemoteError(f"{run_uuid!r} is not a run UUID; nothing was sent to the host")


@dataclass(frozen=True)
class Preflight:
    base: str
    run_dir: str
    launched: bool
    tool_status: int | None
    tool_output: str
    safety_report: str
    environment_report: str = ""


def preflight(
    conn: Connection, base: str, run_uuid: str, tool_check: str, safety_script: str, environment_script: str = ""
) -> Preflight:
    """One round trip before a launch: make the run directory, say whether this UUID was already launched,
    check the tool, and run the read-only safety probe (every shell start costs ~0.1-0.3 s on a busy host).

    The answer: the marker, then answer, $HOME, the base the host resolved, launched, the tool check's
    status and its output's length in bytes, each ended by NUL; then that many bytes of tool output; then
    the safety report; then, with an environment script, NUL benchweb-environment NUL and its report (neither
    probe can print a NUL, so neither can end the safety report early or forge the other). The run directory is
    not read back: it is <base>/<uuid>, computed here. The tool check's output goes through a file named with
    the shell's pid: two attempts at one run's launch at once (a sweep re-sent it while the first waited in the
    queue) each read their own."""
    expression = base_expression(base)
    d = q(_checked_uuid(run_uuid))
    home_check = 'case "$HOME" in /*) ;; *) answer=home;; esac\n' if expression.startswith('"$HOME"') else ""
    script = f"""base={expression}
d="$base"/{d}
answer=ok launched=no
{home_check}[ $answer = ok ] && ! mkdir -p "$d" "$base/locks" "$base/done" 2>/dev/null && answer=mkdir
[ $answer = ok ] && [ -d "$d/launched" ] && launched=yes
printf '\\0benchweb-preflight\\0%s\\0%s\\0%s\\0%s\\0' "$answer" "$HOME" "$base" "$launched"
[ $answer = ok ] || exit 0
out="$d/preflight.$$.out"
( {tool_check} ) >"$out" 2>&1
status=$?
printf '%s\\0%s\\0' "$status" "$(wc -c <"$out")"
cat "$out"; rm -f "$out"
(
{safety_script}
)
{_environment_section(environment_script)}"""
    out = conn.run(script, timeout=120).stdout
    (answer, home, resolved, launched), rest = answer_fields(out, "preflight", 4)
    if answer == "home":
        raise RemoteError(
            f"the login user's home on the host is not an absolute path (HOME={paths.shown(home)}), so the run "
            f"directory {base!r} means nothing there; set an absolute run directory on the host page"
        )
    if answer == "mkdir":
        raise RemoteError(
            f"cannot create the run directory in {paths.shown(resolved)} on the host; check that the login user may "
            "write there, or choose another run directory on the host page"
        )
    if answer != "ok":
        raise RemoteError(f"the preflight on the host answered {out[:300]!r}")
    expected = resolved_base(base, home)
    _check_resolved(resolved, expected)
    (status, length), rest = _fields(rest, 2, out)
    size = _int_or_none(length.strip())
    if size is None or size > len(rest):
        raise RemoteError(f"the preflight on the host answered a tool check of {length!r} bytes: {out[:300]!r}")
    safety_report, _, environment_report = rest[size:].partition(_ENVIRONMENT_MARKER)
    return Preflight(
        base=resolved,
        run_dir=run_dir_for(resolved, run_uuid),
        launched=launched == "yes",
        tool_status=_int_or_none(status),
        tool_output=rest[:size].decode(errors="replace"),
        safety_report=safety_report.decode(errors="replace"),
        environment_report=environment_report.decode(errors="replace"),
    )


_ENVIRONMENT_MARKER = b"\0benchweb-environment\0"


def _environment_section(environment_script: str) -> str:
    """The environment probe after the safety probe, in the same exchange, behind its own marker."""
    if not environment_script:
        return ""
    return f"printf '\\0benchweb-environment\\0'\n(\n{environment_script}\n)\n"


def _check_resolved(resolved: str, expected: str) -> None:
    """The base the host used is the one benchweb computed, and one that may hold run directories."""
    if resolved != expected:
        raise RemoteError(
            f"the host resolved the run directory to {paths.shown(resolved)}, not {paths.shown(expected)}; nothing was "
            "started: check the login user's home and the run directory on the host page"
        )
    try:
        paths.check(resolved, field="run directory as the host resolved it (check the login user's home)", home=True)
    except paths.PathError as exc:
        raise RemoteError(f"{exc} Nothing was started.") from exc


def answer_fields(out: bytes, marker: str, count: int) -> tuple[list[str], bytes]:
    """The `count` fields after NUL <marker> NUL, each ended by NUL, and the bytes after them.

    What comes before the marker (a login banner) does not count. A shell value cannot hold a NUL byte,
    so no value, whatever characters it has, can end its own field early or make up another."""
    head = b"\0benchweb-" + marker.encode() + b"\0"
    start = out.find(head)
    if start < 0:
        raise RemoteError(f"the {marker} on the host answered {out[:300]!r}")
    return _fields(out[start + len(head) :], count, out)


def _fields(data: bytes, count: int, out: bytes) -> tuple[list[str], bytes]:
    parts = data.split(b"\0", count)
    if len(parts) <= count:
        raise RemoteError(f"the host's answer ended early: {out[:300]!r}")
    # surrogateescape keeps bytes that are not UTF-8 visible to jobs/paths.py, which refuses them.
    return [part.decode("utf-8", "surrogateescape") for part in parts[:count]], parts[count]


def done_dir(base: str) -> str:
    """Where wrappers leave a marker named by their run's UUID when the tool has ended (after `status`): the
    host's observation step lists this one directory to see every run on the host that finished."""
    return f"{base}/done"


def done_marker(run_dir: str) -> str:
    base, _, run_uuid = run_dir.rpartition("/")
    return f"{done_dir(base)}/{run_uuid}"


def lock_path_for(base: str, target_path: str) -> str:
    digest = hashlib.sha256(target_path.encode()).hexdigest()[:16]
    return f"{base}/locks/{digest}.lock"


def wrapper_script(plan: Plan) -> str:
    command = " ".join(q(arg) for arg in plan.argv)
    watchdog = f"timeout -k 30 {int(plan.limit_s)} "
    return f"""#!/bin/sh
# benchweb run {plan.run_uuid}: started detached; see jobs/remote.py for the protocol.
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
        if not _TUNABLE.fullmatch(path) or not _INT.fullmatch(value):
            raise RemoteError(f"refusing to write {value!r} to {path!r}: not a block queue's rq_affinity")
        lines.append(f"echo {value} > {q(path)} 2>>tuning.log || echo {q('could not write ' + path)} >>tuning.log\n")
    return "".join(lines)


def launch(conn: Connection, plan: Plan) -> bool:
    """Start the uploaded run (see upload) detached; False when this UUID was already launched: the atomic
    mkdir makes a second launch a no-op, never a second benchmark. From the moment this command is sent the
    host may have started the run, whatever happens to its answer: the caller records that first."""
    command = (f"cd {q(plan.run_dir)} && if mkdir launched 2>/dev/null; then "
               "setsid sh run.sh </dev/null >wrapper.log 2>&1 & echo started; else echo already; fi")  # fmt: skip
    return _one_word(conn, command, {"started", "already"}, doing="launch") == "started"


def claim_launch(conn: Connection, run_dir: str) -> bool:
    """Take this run's launch without starting it (the same atomic `mkdir launched` as `launch`), so that nothing
    starts it from now on; False when a launch took it first (the run may be running). A run directory that is
    gone cannot be launched either (`launch` starts in it): True."""
    command = (f"cd {q(run_dir)} 2>/dev/null || {{ echo gone; exit 0; }}; "
               "if mkdir launched 2>/dev/null; then echo claimed; else echo taken; fi")  # fmt: skip
    return _one_word(conn, command, {"claimed", "taken", "gone"}, doing="taking the launch") != "taken"


def _one_word(conn: Connection, command: str, words: set[str], *, doing: str) -> str:
    """The one word of `words` the command answers; anything else is the host's error, shown."""
    result = conn.run(command, timeout=30)
    answer = result.stdout.decode().strip()
    if answer not in words:
        raise RemoteError(f"{doing} on the host answered {answer!r} (stderr: {result.stderr.decode()[:300]})")
    return answer


def poll(conn: Connection, run_dir: str, tail_file: str, *, wait_s: float = 0) -> PollResult:
    """Read the run's state. With wait_s, first wait on the host (up to that long) for it to finish:
    near a run's expected end this notices the finish within 0.1 s instead of a poll interval later."""
    d = q(run_dir)
    tenths = max(0, min(100, int(wait_s * 10)))
    # The answer: the marker, then state, pid, started, exit and finished (epoch seconds the tool ended), each
    # ended by NUL; then the tail. The status file is looked at again once ps says the wrapper is gone: the
    # wrapper writes it as its last act, so a run that finished between the two looks is finished, not dead.
    script = f"""d={d}
if [ ! -d "$d" ]; then printf '\\0benchweb-poll\\0vanished\\0\\0\\0\\0\\0'; exit 0; fi
i=0; while [ $i -lt {tenths} ] && [ ! -f "$d/status" ]; do sleep 0.1; i=$((i+1)); done
pid=$(cat "$d/pid" 2>/dev/null)
started=$(cat "$d/started" 2>/dev/null)
status=
if [ -f "$d/status" ]; then state=finished; status=$(cat "$d/status")
elif [ -n "$pid" ] && ps -p "$pid" -o args= 2>/dev/null | grep -q run.sh; then state=running
elif [ -f "$d/status" ]; then state=finished; status=$(cat "$d/status")
elif [ -d "$d/launched" ] && [ -z "$pid" ]; then state=starting
elif [ -d "$d/launched" ]; then state=dead
else state=unlaunched; fi
finished=$(cat "$d/finished" 2>/dev/null)
printf '\\0benchweb-poll\\0%s\\0%s\\0%s\\0%s\\0%s\\0' "$state" "$pid" "$started" "$status" "$finished"
tail -c {TAIL_BYTES} "$d/"{q(tail_file)} 2>/dev/null || true
"""
    out = conn.run(script, timeout=60 + wait_s).stdout
    (state, pid, started, status, finished), tail = answer_fields(out, "poll", 5)
    if state not in {"running", "starting", "finished", "dead", "vanished", "unlaunched"}:
        raise RemoteError(f"poll on the host answered {out[:300]!r}")
    return PollResult(
        state=state,
        exit_status=_int_or_none(status),
        tail=tail.decode(errors="replace"),
        pid=_int_or_none(pid),
        started_epoch=_float_or_none(started),
        finished_epoch=_float_or_none(finished),
    )


def read_file(conn: Connection, path: str) -> bytes:
    from jobs.ssh import SSHError

    try:
        return conn.get_file_if_any(path) or b""
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


def cleanup(conn: Connection, run_dir: str, test_files_glob: str | None, *, base: str, run_uuid: str) -> None:
    """Remove the run directory, its done marker and, for directory targets, the run's own test files: one
    command in the session's long-lived shell, which checks before it removes.

    `base` is the host's run directory as configured (Host.run_base_dir). Only <base>/<run_uuid> is removed:
    checked here before anything is sent, and again by the host in the same command that removes: the directory
    above the run directory must be, on the host, the very directory the configured base is there (both
    resolved by the host, `cd -P` then `pwd -P`, a base in the login user's home from "$HOME"). A symbolic link
    inside the run directory is removed, never followed."""
    from jobs.ssh import SSHError

    _check_run_dir(run_dir, base, run_uuid)
    test_dir = _own_test_files_dir(test_files_glob, run_uuid)
    # rm -r removes a symbolic link inside (or as) the run directory, never what it points to. A run directory
    # already gone (a second clean-up) leaves nothing to compare there and nothing to remove.
    # `&& echo .` keeps a trailing newline of a name, which $(...) would strip, in the comparison.
    script = [
        f"parent=$(cd -P -- {q(run_dir.rpartition('/')[0])} 2>/dev/null && pwd -P && echo .)",
        f"expected=$(cd -P -- {base_expression(base)} 2>/dev/null && pwd -P && echo .)",
        f"""if [ -n "$parent" ] && [ "$parent" != "$expected" ]; then printf '%s' "${{expected%?.}}"; \
exit {_CLEANUP_REFUSED}; fi""",
    ]
    if test_dir is not None:
        # The UUID is checked (hex digits and dashes), so the glob is the one unquoted word, and it matches only
        # this run's own files; -f alone removes no directory.
        star = "*" if (test_files_glob or "").endswith("*") else ""
        script.append(f"rm -f -- {q(test_dir)}/benchweb-{_checked_uuid(run_uuid)}{star} || exit 1")
    script.append(f'[ -z "$parent" ] || rm -rf -- {q(run_dir)} {q(done_marker(run_dir))}')
    try:
        # Over SFTP the same took three realpath exchanges and then this command (before that, some fifteen
        # exchanges a run); each waits for the host, which a busy host makes slow. Checking in the command that
        # removes also leaves no time between the check and the removal.
        done = conn.run("\n".join(script), timeout=120)
    except SSHError as exc:
        raise RemoteError(f"could not remove {paths.shown(run_dir)} on the host ({exc}); remove it by hand") from exc
    if done.exit_status == _CLEANUP_REFUSED:
        expected = done.stdout.decode(errors="replace") or base
        raise RemoteError(
            f"refused to remove {paths.shown(run_dir)}: it is not this run's directory in the host's run directory "
            f"{paths.shown(expected)} (changed since the run started?); nothing was removed, remove it by hand"
        )
    if done.exit_status != 0:
        why = done.stderr.decode(errors="replace").strip()[-300:] or f"rm exited with status {done.exit_status}"
        raise RemoteError(f"could not remove {paths.shown(run_dir)} on the host ({why}); remove it by hand")


# The exit status of a clean-up the host refused (the run directory is not in the base it resolves).
_CLEANUP_REFUSED = 3


def _own_test_files_dir(test_files_glob: str | None, run_uuid: str) -> str | None:
    """The directory of a run's own test files (`<dir>/benchweb-<uuid>` or `<dir>/benchweb-<uuid>*`), else a
    refusal: nothing else is ever removed there."""
    if not test_files_glob:
        return None
    directory, _, pattern = test_files_glob.rpartition("/")
    if pattern not in (f"benchweb-{run_uuid}", f"benchweb-{run_uuid}*") or paths.problem(directory):
        raise RemoteError(f"refusing to remove files that are not this run's own: {test_files_glob!r}")
    return directory


def _check_run_dir(run_dir: str, base: str, run_uuid: str) -> None:
    """Refuse, before sending anything, a run directory that is not <base>/<run_uuid>. A base in the login
    user's home is only known up to the home here; the host checks the whole path."""
    in_home, rest = _split_base(base)
    suffix = f"/{_checked_uuid(run_uuid)}"
    parent = run_dir.removesuffix(suffix)
    if in_home:
        fits = not rest or parent.endswith(f"/{rest}")
    else:
        fits = parent == rest
    if paths.problem(run_dir) or not run_dir.endswith(suffix) or not fits:
        raise RemoteError(
            f"refused to remove {paths.shown(run_dir)}: it is not <run directory>/{run_uuid} for the run directory "
            f"{base or DEFAULT_BASE!r}; nothing was removed"
        )


# A number from the host is ASCII digits and nothing else: int() and float() would also take "٣", " 1_0 ",
# "inf" and "nan".
_INT = re.compile(r"[0-9]{1,18}")
_FLOAT = re.compile(r"[0-9]{1,15}(\.[0-9]{1,9})?")


def _float_or_none(value: str | None) -> float | None:
    return float(value) if value is not None and _FLOAT.fullmatch(value) else None


def _int_or_none(value: str | None) -> int | None:
    return int(value) if value is not None and _INT.fullmatch(value) else None


def upload(conn: Connection, plan: Plan) -> None:
    """Put the run's files in its directory (SFTP starts no shell). Nothing runs yet: a failure here means
    the run was never started."""
    for name, data in plan.files.items():
        conn.put_file(f"{plan.run_dir}/{name}", data, mode=0o700 if name.endswith(".sh") else 0o600)


# ------------------------------------------------------------------------------------- observation over SFTP
#
# The worker's observation step reads a running run's files over its session's SFTP channel: no shell, no
# process on the host, nothing but the file reads of the session's SFTP server (jobs/runs/observing.py).

# A small file the wrapper writes (pid, started, finished, status) is a number on one line; `ended` is four.
_SMALL_FILE_BYTES = 128


def finished_runs(conn: Connection, base: str) -> set[str] | None:
    """The UUIDs of the runs in `base` whose tool has ended (their done markers); None when the host has no
    done directory (a run launched before markers existed, whose end `look` finds instead)."""
    names = conn.list_dir(done_dir(base))
    if names is None:
        return None
    return {name for name in names if _is_uuid(name)}


def _is_uuid(name: str) -> bool:
    try:
        return str(uuid.UUID(name)) == name
    except ValueError:
        return False


def _small(conn: Connection, path: str) -> str | None:
    data = conn.read_from(path, 0, max_bytes=_SMALL_FILE_BYTES)
    return None if data is None else data.decode("ascii", errors="replace").strip()


@dataclass(frozen=True)
class Sighting:
    """What the wrapper has written so far about its start: its pid, and when the tool started."""

    pid: int | None
    started_epoch: float | None


def sighting(conn: Connection, run_dir: str) -> Sighting:
    return Sighting(pid=_int_or_none(_small(conn, f"{run_dir}/pid")),
                    started_epoch=_float_or_none(_small(conn, f"{run_dir}/started")))  # fmt: skip


def read_output(conn: Connection, path: str, offset: int, *, max_bytes: int = TAIL_BYTES) -> tuple[int, bytes]:
    """What the tool appended to `path` since `offset`: (the new offset, the bytes). At most the last
    `max_bytes` of the file are read; when more than that is new (or the file was replaced by a shorter one),
    the bytes start mid-file and the caller must not join them to what it kept."""
    size = conn.size_of(path)
    if size is None:
        return 0, b""
    start = offset if 0 <= size - offset <= max_bytes else max(0, size - max_bytes)
    if start == size:
        return start, b""
    data = conn.read_from(path, start, max_bytes=size - start) or b""
    return start + len(data), data


def look(conn: Connection, run_dir: str, pid: int | None) -> str:
    """Is the run's wrapper still there? running, starting (launched, no pid yet), finished (`status` exists),
    dead (its pid is gone and there is no status), vanished (no run directory), unlaunched, or unknown (the
    host has no Linux-style /proc to ask: the caller asks by a command instead, `poll`). A running run, the
    common answer, takes one read of its wrapper's /proc entry; the run's files are looked at only when that
    is not its wrapper."""
    cmdline = None if pid is None else conn.read_from(f"/proc/{pid}/cmdline", 0, max_bytes=4096)
    if cmdline is not None and b"run.sh" in cmdline.split(b"\0"):
        return "running"
    if conn.size_of(f"{run_dir}/status") is not None:
        return "finished"
    if conn.size_of(run_dir) is None:
        return "vanished"
    if conn.size_of(f"{run_dir}/launched") is None:
        return "unlaunched"
    if pid is None:
        return "starting"
    if cmdline is None and conn.size_of("/proc/self/cmdline") is None:
        return "unknown"
    # The wrapper writes `status` as its last act: one that ended between the two looks finished.
    return "finished" if conn.size_of(f"{run_dir}/status") is not None else "dead"


def final_state(conn: Connection, run_dir: str) -> PollResult:
    """A finished run's exit status and its host-clock start and end, read from its files for collection: from
    `ended`, one file the wrapper writes before `status`, else (a wrapper older than it) from the four files."""
    ended = _ended(conn, run_dir)
    if ended is not None:
        return ended
    status = _small(conn, f"{run_dir}/status")
    seen = sighting(conn, run_dir)
    return PollResult(
        state="finished" if status is not None else look(conn, run_dir, seen.pid),
        exit_status=_int_or_none(status),
        tail="",
        pid=seen.pid,
        started_epoch=seen.started_epoch,
        finished_epoch=_float_or_none(_small(conn, f"{run_dir}/finished")),
    )


def _ended(conn: Connection, run_dir: str) -> PollResult | None:
    """`ended` is "<exit status> <pid> <started> <finished>\\n", every field as the wrapper wrote it; None when
    there is no such file or it is not that (the caller reads the files one by one)."""
    data = conn.read_from(f"{run_dir}/ended", 0, max_bytes=_SMALL_FILE_BYTES)
    fields = data.decode("ascii", errors="replace").split(" ") if data and data.endswith(b"\n") else []
    if len(fields) != 4:
        return None
    fields[3] = fields[3].removesuffix("\n")
    status, pid = _int_or_none(fields[0]), _int_or_none(fields[1])
    started, finished = _float_or_none(fields[2]), _float_or_none(fields[3])
    if status is None or pid is None:
        return None
    return PollResult(state="finished", exit_status=status, tail="", pid=pid, started_epoch=started,
                      finished_epoch=finished)  # fmt: skip
