"""Looking at a launched run: by one command (`poll`, which can wait on the host for the end), or, as the
worker's observation step does, only over SFTP: no shell and no process on the host, nothing but the file
reads of the session's SFTP server (jobs/runs/watching.py). And reading a file for collection."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING

from jobs.remote.protocol import (
    TAIL_BYTES,
    PollResult,
    RemoteError,
    answer_fields,
    done_dir,
    float_or_none,
    int_or_none,
    q,
)

if TYPE_CHECKING:  # paramiko is loaded where a session is opened
    from jobs.ssh import Connection


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
        exit_status=int_or_none(status),
        tail=tail.decode(errors="replace"),
        pid=int_or_none(pid),
        started_epoch=float_or_none(started),
        finished_epoch=float_or_none(finished),
    )


def read_file(conn: Connection, path: str) -> bytes:
    from jobs.ssh import SSHError

    try:
        return conn.get_file_if_any(path) or b""
    except SSHError:
        raise
    except OSError as exc:
        raise RemoteError(f"could not read {path} on the host: {exc}") from exc


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
    return Sighting(pid=int_or_none(_small(conn, f"{run_dir}/pid")),
                    started_epoch=float_or_none(_small(conn, f"{run_dir}/started")))  # fmt: skip


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
        exit_status=int_or_none(status),
        tail="",
        pid=seen.pid,
        started_epoch=seen.started_epoch,
        finished_epoch=float_or_none(_small(conn, f"{run_dir}/finished")),
    )


def _ended(conn: Connection, run_dir: str) -> PollResult | None:
    """`ended` is "<exit status> <pid> <started> <finished>\\n", every field as the wrapper wrote it; None when
    there is no such file or it is not that (the caller reads the files one by one)."""
    data = conn.read_from(f"{run_dir}/ended", 0, max_bytes=_SMALL_FILE_BYTES)
    fields = data.decode("ascii", errors="replace").split(" ") if data and data.endswith(b"\n") else []
    if len(fields) != 4:
        return None
    fields[3] = fields[3].removesuffix("\n")
    status, pid = int_or_none(fields[0]), int_or_none(fields[1])
    started, finished = float_or_none(fields[2]), float_or_none(fields[3])
    if status is None or pid is None:
        return None
    return PollResult(state="finished", exit_status=status, tail="", pid=pid, started_epoch=started,
                      finished_epoch=finished)  # fmt: skip
