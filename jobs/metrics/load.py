"""A worker's load and its headroom, as the worker answers /metrics (docs/operations/sizing.md).

Each worker keeps, in its own process, a sample of its CPU time every SAMPLE_EVERY_S (a daemon thread started when
it is ready) and the number of runs each of its observation steps found on a host. Asked (the remote-control
command messages.LOAD, broadcast by the /metrics scrape with its ping), it answers with what the last minute
measured: the CPU it used as a share of one core (a Python process's code runs on one core at a time, whatever its
threads), its resident memory, its threads busy, the runs it watched, and from them its headroom: how much of the
tighter of its CPU and its threads is left. The CPU per watched run-minute it measured is the sizing model, live:
`runs_watched / cpu_ratio` runs per core.
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from dataclasses import dataclass, field

# One sample of the process's CPU every this many seconds, kept for the last WINDOW_S.
SAMPLE_EVERY_S = 5.0
WINDOW_S = 60.0
# A host's count of watched runs is current while its last full step is this recent (a step comes every second,
# and a host that did not answer is tried again within seconds).
WATCHED_FRESH_S = 30.0


@dataclass
class Meter:
    """What one worker process measured of itself; thread-safe."""

    cpu: deque[tuple[float, float]] = field(default_factory=lambda: deque(maxlen=int(WINDOW_S / SAMPLE_EVERY_S) + 1))
    watched: dict[int, tuple[float, int]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def sample(self, now: float | None = None, cpu_seconds: float | None = None) -> None:
        """Note the process's CPU time (user + system, every thread) now."""
        sample = (time.monotonic() if now is None else now, time.process_time() if cpu_seconds is None else cpu_seconds)
        with self.lock:
            self.cpu.append(sample)

    def note_watched(self, host_id: int, runs: int, now: float | None = None) -> None:
        """An observation step of `host_id` found `runs` running runs there."""
        with self.lock:
            self.watched[host_id] = (time.monotonic() if now is None else now, runs)

    def answer(self, *, threads_busy: int, threads: int, now: float | None = None) -> dict[str, float | int | None]:
        """The worker's figures over the last minute (None where there is no sample yet)."""
        live = now is None
        now = time.monotonic() if now is None else now
        with self.lock:
            # Asked live, the process's CPU time now ends the window: one sample is enough for a ratio.
            cpu = list(self.cpu) + ([(now, time.process_time())] if live else [])
            for host_id in [h for h, (at, _) in self.watched.items() if now - at > WATCHED_FRESH_S]:
                del self.watched[host_id]
            runs = sum(count for _, count in self.watched.values())
        ratio = cpu_ratio(cpu)
        return {
            "cpu_ratio": ratio,
            "rss_bytes": rss_bytes(),
            "threads_busy": threads_busy,
            "threads": threads,
            "runs_watched": runs,
            "headroom_ratio": headroom(ratio, threads_busy, threads),
            "cpu_seconds_per_run_minute": None if ratio is None or not runs else round(60 * ratio / runs, 4),
        }


def cpu_ratio(samples: list[tuple[float, float]]) -> float | None:
    """CPU seconds per wall second between the first and the last sample (1.0: one core busy throughout)."""
    if len(samples) < 2 or samples[-1][0] <= samples[0][0]:
        return None
    (start, cpu_start), (end, cpu_end) = samples[0], samples[-1]
    return round(max(0.0, cpu_end - cpu_start) / (end - start), 4)


def headroom(ratio: float | None, threads_busy: int, threads: int) -> float | None:
    """What is left of the tighter of one core and the worker's threads, 0 to 1 (0: add a worker)."""
    shares = [ratio] if ratio is not None else []
    if threads > 0:
        shares.append(threads_busy / threads)
    if not shares:
        return None
    return round(max(0.0, 1.0 - max(shares)), 4)


def rss_bytes() -> int | None:
    """This process's resident memory, from /proc (None where there is none)."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


METER = Meter()
_started = threading.Event()


def start_sampling(stop: threading.Event) -> None:
    """Sample this process's CPU every SAMPLE_EVERY_S until `stop` (once per process; later calls do nothing)."""
    if _started.is_set():
        return
    _started.set()

    def loop() -> None:
        while True:
            METER.sample()
            if stop.wait(SAMPLE_EVERY_S):
                return

    threading.Thread(target=loop, name="load-meter", daemon=True).start()
