"""Which Celery workers are alive, and their load, as the /metrics scrape reports them.

The ping is a broadcast of the remote-control command messages.LOAD: every worker answers with its load over the
last minute and its headroom (jobs/metrics/load.py), and its answer is its sign of life. A broadcast waits its
whole timeout for the answers, so one ping's answer is kept in this process for PING_EVERY: a scrape waits for a
ping at most once in that time, and never longer than PING_TIMEOUT. Scrapes that come in together wait for the one
ping under way rather than sending their own.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from jobs import messages

PING_TIMEOUT = 0.5
PING_EVERY = 15.0


@dataclass(frozen=True)
class Seen:
    """The answer to one ping: when it was sent (Unix seconds) and the workers that answered, or None with the
    reason when the broker could not be reached."""

    at: float
    workers: tuple[str, ...] | None
    error: str = ""
    # Each worker's answer (jobs/metrics/load.py's figures), by name; {} for a worker that answered without them.
    loads: dict[str, dict[str, Any]] = field(default_factory=dict)


_lock = threading.Lock()
_last: Seen | None = None


def seen() -> Seen:
    """The last ping's answer, pinging afresh when it is PING_EVERY old."""
    global _last
    with _lock:
        now = time.time()
        if _last is None or now - _last.at >= PING_EVERY:
            _last = _ping(now)
        return _last


def forget() -> None:
    """Drop the kept answer, so that the next scrape pings (tests, which start and stop workers)."""
    global _last
    with _lock:
        _last = None


def _ping(now: float) -> Seen:
    try:
        answers = messages.ask_workers(messages.LOAD, PING_TIMEOUT)
        loads = {name: answer if isinstance(answer, dict) and "cpu_ratio" in answer else {}
                 for name, answer in answers.items()}  # fmt: skip
        return Seen(now, tuple(sorted(answers)), loads=loads)
    except Exception as exc:  # kombu's OperationalError, an OSError, a Redis error: the broker is unreachable
        return Seen(now, None, f"{exc.__class__.__name__}: {exc}")
