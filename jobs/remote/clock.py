"""Reading a host's realtime clock over the worker's session, for a group member's clock offset: each probe is one
tiny command (`date +%s.%N`) in the session's pooled shell, timed on the worker's realtime clock before it is
sent and when its answer is back. No new login and no process but `date` per probe. The offset itself is
jobs/sets/group_clocks.py's (NTP's rule, the probe with the shortest round trip); docs/user-guide/groups.md."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from jobs.remote.protocol import RemoteError

if TYPE_CHECKING:  # paramiko is loaded where a session is opened
    from jobs.ssh import Connection

# Enough for the shortest round trip to be a quiet one (NTP's clock filter keeps the best of 8; a launch cannot
# wait that long on a slow link), few enough to cost a group member's launch some milliseconds on a LAN.
PROBES = 5
PROBE_TIMEOUT_S = 5.0
# The realtime clock in seconds and nanoseconds (GNU and busybox date); an answer without them is refused below.
PROBE_COMMAND = "date +%s.%N"
_HOST_TIME = re.compile(r"[0-9]{9,}\.[0-9]{9}")

# One probe as group_clocks.Probe takes it: t0 sent and t3 answered (the worker's clock), t1 and t2 the host's.
ProbeTimes = tuple[float, float, float, float]


def clock_probes(conn: Connection, count: int = PROBES, now: Callable[[], float] = time.time) -> list[ProbeTimes]:
    """`count` exchanges with the host's realtime clock. The host gives one reading, taken somewhere between the
    worker's t0 and t3, so it is both t1 and t2. RemoteError when the host's date gives no nanoseconds (not GNU or
    busybox date: the offset is then not measured); the session's own SSHError passes through."""
    probes = []
    for _ in range(count):
        sent = now()
        result = conn.run(PROBE_COMMAND, timeout=PROBE_TIMEOUT_S)
        answered = now()
        host = host_time(result.exit_status, result.stdout)
        probes.append((sent, host, host, answered))
    return probes


def host_time(status: int, stdout: bytes) -> float:
    """The host's answer to PROBE_COMMAND in epoch seconds; RemoteError says why it is not one."""
    text = stdout.decode("ascii", errors="replace").strip()
    if status != 0 or not _HOST_TIME.fullmatch(text):
        raise RemoteError(
            f"the host's `{PROBE_COMMAND}` answered {text[:40]!r} (status {status}), not epoch seconds with "
            "nanoseconds: its date is neither GNU's nor busybox's, so its clock offset is not measured"
        )
    return float(text)
