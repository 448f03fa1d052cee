"""What every step of the run-directory protocol shares: the run directory's paths on the host, the plan a
launch carries, the error, and the reading of the host's answers (NUL-ended fields, plain numbers)."""

from __future__ import annotations

import hashlib
import re
import shlex
import uuid
from dataclasses import dataclass

from jobs import paths

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
    in_home, rest = split_base(base)
    if in_home:
        return '"$HOME"' + (f"/{q(rest)}" if rest else "")
    return q(rest)


def resolved_base(base: str, home: str) -> str:
    """What base_expression(base) is on a host whose login user's home is `home`: the same string operations."""
    in_home, rest = split_base(base)
    if not in_home:
        return rest
    return home + (f"/{rest}" if rest else "")


def run_dir_for(resolved: str, run_uuid: str) -> str:
    return f"{resolved}/{checked_uuid(run_uuid)}"


def split_base(base: str) -> tuple[bool, str]:
    """(whether the base is in the login user's home, the rest of it without trailing slashes)."""
    base = base or DEFAULT_BASE
    try:
        paths.check(base, field="run directory", home=True)
    except paths.PathError as exc:
        raise RemoteError(f"{exc} Fix it on the host page; nothing was sent to the host.") from exc
    if base == "~" or base.startswith("~/"):
        return True, base[2:].rstrip("/")
    return False, base.rstrip("/") or "/"


def checked_uuid(run_uuid: str) -> str:
    try:
        if str(uuid.UUID(run_uuid)) == run_uuid:
            return run_uuid
    except ValueError:
        pass
    raise RemoteError(f"{run_uuid!r} is not a run UUID; nothing was sent to the host")


def answer_fields(out: bytes, marker: str, count: int) -> tuple[list[str], bytes]:
    """The `count` fields after NUL <marker> NUL, each ended by NUL, and the bytes after them.

    What comes before the marker (a login banner) does not count. A shell value cannot hold a NUL byte,
    so no value, whatever characters it has, can end its own field early or make up another."""
    head = b"\0benchweb-" + marker.encode() + b"\0"
    start = out.find(head)
    if start < 0:
        raise RemoteError(f"the {marker} on the host answered {out[:300]!r}")
    return read_fields(out[start + len(head) :], count, out)


def read_fields(data: bytes, count: int, out: bytes) -> tuple[list[str], bytes]:
    """The `count` NUL-ended fields at the start of `data`, and the bytes after them; `out` is the whole answer,
    shown when it ended early."""
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


# A number from the host is ASCII digits and nothing else: int() and float() would also take "٣", " 1_0 ",
# "inf" and "nan".
_INT = re.compile(r"[0-9]{1,18}")
_FLOAT = re.compile(r"[0-9]{1,15}(\.[0-9]{1,9})?")


def float_or_none(value: str | None) -> float | None:
    return float(value) if value is not None and _FLOAT.fullmatch(value) else None


def int_or_none(value: str | None) -> int | None:
    return int(value) if value is not None and _INT.fullmatch(value) else None
