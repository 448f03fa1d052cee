"""Which Celery workers are alive, as the /metrics scrape reports them.

A broadcast ping (jobs.messages.ping_workers) waits its whole timeout for the answers, so one ping's answer is
kept in this process for PING_EVERY: a scrape waits for a ping at most once in that time, and never longer than
PING_TIMEOUT. Scrapes that come in together wait for the one ping under way rather than sending their own.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

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
        return Seen(now, tuple(messages.ping_workers(PING_TIMEOUT)))
    except Exception as exc:  # kombu's OperationalError, an OSError, a Redis error: the broker is unreachable
        return Seen(now, None, f"{exc.__class__.__name__}: {exc}")
