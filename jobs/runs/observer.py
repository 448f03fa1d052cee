"""The observer: one loop per worker process that steps every host it looks after (jobs/runs/watching.py says what
a step reads and what it means).

A host's running runs are looked after by one observer at a time, the one whose token is the host's
`observer_token`. jobs/runs/steps.py `watch` writes a new token and sends it in one `jobs.observe_host` message on
the host's site queue; the worker that takes the message hands the host to its process's observer (`adopt`, which
starts the loop on first use) and is done. From then on nothing goes through the broker for that host until its
last run ends: the loop steps it every STEP_S, and more often while a run is due to end, until no running run is
left (the token is given back) or another observer took the host (its token is not ours: we drop it). A worker
killed leaves its hosts' `observed_at` to go stale; the sweep then sends their tokens anew, to a worker alive.

The work of a round is split so that the database is asked per round, not per host. The loop's own thread alone
talks to the database: for the hosts due a full step, one query for their tokens, one UPDATE of their
`observed_at`, one query for their running runs; after the looks, one transaction for every live figure and
heartbeat and the hosts' telemetry (watching.write). OBSERVER_THREADS threads talk to the hosts over the worker's
sessions, one host each at a time, so a slow host holds one of them and never the loop (nor another host's
step). Quick steps (a listing of the done directory, for a run due to end) are paced so that an observer holding
many hosts spends at most QUICK_STEPS_PER_S on them, NEAR_END_STEP_S apart at the quickest.

Under Celery's threads pool (the default) a worker process has one observer; under prefork each child that took a
message has its own.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import close_old_connections
from django.utils import timezone

from jobs import remote, ssh
from jobs.hosts import connecting
from jobs.metrics import load
from jobs.models import Host, HostSample, Run
from jobs.runs import steps, watching

log = logging.getLogger(__name__)

# Threads that talk to the hosts (each steps one host at a time).
OBSERVER_THREADS = int(os.environ.get("BENCHWEB_OBSERVER_THREADS", "4"))
# Live figures an observer reads (and writes) a second at most, over all its hosts: the runs someone looks at every
# watching.PROGRESS_EVERY_S, the others every watching.UNWATCHED_PROGRESS_EVERY_S, all of them less often when that
# asks for more; wrappers are looked at in /proc as if every run's figures were read every PROGRESS_EVERY_S (500
# runs: every 12.5 s). Every write is an UPDATE of the run's row, which the database pays too; ends are seen as fast
# whatever the number (one listing a host).
PROGRESS_READS_PER_S = 100.0
# Quick steps per second an observer spends at most, over all its hosts with a run due to end.
QUICK_STEPS_PER_S = 50.0
# The loop sleeps until its next step is due, or a step ended or a host was handed over; then it waits this long
# more, so that the steps ending about then are written together.
GATHER_S = 0.02
# A host whose full step is due within this long steps in the round of those due now (steps are STEP_S apart, give
# or take this), so that a round's few queries serve many hosts.
FULL_STEP_WINDOW_S = 0.25
# The loop lets Django drop database connections that are too old or broken this often (CONN_MAX_AGE's rule).
TIDY_EVERY_S = 1.0
# After an error of its own (the database away), the loop waits this long before its next round.
PAUSE_AFTER_ERROR_S = 1.0


@dataclass
class _Held:
    """One host this observer looks after."""

    host_id: int
    token: str
    # Tokens handed over before the last one: a message kept by the broker through a restart may bring an old one
    # after the current one; the first full step keeps whichever is the host's.
    other_tokens: set[str] = field(default_factory=set)
    memory: watching.HostMemory = field(default_factory=watching.HostMemory)
    next_full: float = 0.0  # monotonic
    next_quick: float = float("inf")
    busy: bool = False
    watched: list[Run] = field(default_factory=list)


@dataclass
class _Outcome:
    """What one step of one host found, handed back to the loop."""

    held: _Held
    findings: list[watching.Finding]
    error: Exception | None = None
    full: bool = True


class Observer:
    """Steps the hosts handed to it; `run_round` is one round (the loop calls it, a test may too)."""

    def __init__(self, threads: int = OBSERVER_THREADS, *, inline: bool = False) -> None:
        self._inbox: queue.SimpleQueue[tuple[int, str]] = queue.SimpleQueue()
        self._outcomes: queue.SimpleQueue[_Outcome] = queue.SimpleQueue()
        self._held: dict[int, _Held] = {}
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._pool = None if inline else ThreadPoolExecutor(threads, thread_name_prefix="observe")

    # ------------------------------------------------------------------------------------------- from outside

    def adopt(self, host_id: int, token: str) -> None:
        """Look after `host_id` under `token` from now on (a token of the same host held before is replaced)."""
        self._inbox.put((host_id, token))
        self._wake.set()
        if self._pool is not None:
            self._start()

    def holds(self) -> dict[int, str]:
        """The hosts this observer looks after, with their tokens (read by the loop's thread only, or a test)."""
        return {held.host_id: held.token for held in self._held.values()}

    def stop(self) -> None:
        """The worker stops: the loop ends, and every host it held is given back (its token cleared, so that the
        next launch or sweep hands it to a worker alive at once, without waiting for it to go stale)."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        for held in list(self._held.values()):
            Host.objects.filter(pk=held.host_id, observer_token=held.token).update(observer_token="")
            held.memory.close()
        self._held.clear()
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)

    def _start(self) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, name="observer", daemon=True)
                self._thread.start()

    def _loop(self) -> None:
        tidied = float("-inf")
        while not self._stop.is_set():
            try:
                if time.monotonic() - tidied >= TIDY_EVERY_S:
                    close_old_connections()
                    tidied = time.monotonic()
                wait = self.run_round()
            except Exception:
                log.exception("the observer's round failed; the next one comes in %s s", PAUSE_AFTER_ERROR_S)
                close_old_connections()
                wait = PAUSE_AFTER_ERROR_S
            if self._wake.wait(wait):
                self._wake.clear()
                time.sleep(GATHER_S)

    # ------------------------------------------------------------------------------------------------ a round

    def run_round(self) -> float:
        """Take the hosts handed over, write what the steps that ended found, start the steps due; return how long
        the loop may sleep."""
        while True:
            try:
                host_id, token = self._inbox.get_nowait()
            except queue.Empty:
                break
            held = self._held.get(host_id)
            if held is None:
                self._held[host_id] = _Held(host_id, token)
            elif token != held.token:
                # Handed to us again: what we read of it still holds. Which token is the host's, the full step
                # that comes at once tells.
                held.other_tokens.add(held.token)
                held.token, held.next_full = token, 0.0
        self._write_outcomes()
        now = time.monotonic()
        # Hosts due within the window step with those due now: one round's queries serve them all.
        soon = now + FULL_STEP_WINDOW_S
        due = [held for held in self._held.values() if not held.busy and held.next_full <= soon]
        if due:
            self._start_full_steps(due)
        ending = [held for held in self._held.values() if not held.busy and held.next_quick <= now]
        for held in ending:
            self._submit(held, full=False)
        if self._pool is None:
            self._write_outcomes()  # inline: the steps ended already
        due_next = min((min(held.next_full, held.next_quick) for held in self._held.values() if not held.busy),
                       default=float("inf"))  # fmt: skip
        return max(0.0, min(watching.STEP_S, due_next - time.monotonic()))

    def _start_full_steps(self, due: list[_Held]) -> None:
        now = timezone.now()
        tokens = dict(Host.objects.filter(pk__in=[held.host_id for held in due]).values_list("pk", "observer_token"))
        mine = []
        for held in due:
            if tokens.get(held.host_id) in held.other_tokens | {held.token}:
                held.token, held.other_tokens = tokens[held.host_id], set()
                mine.append(held)
            else:
                self._drop(held)  # replaced by another observer's token, or given back
        if not mine:
            return
        # Tokens were just read: a host replaced since then (only a stale token is replaced, steps.watch) is dropped
        # at its next round, and moving its observed_at meanwhile harms nothing.
        Host.objects.filter(pk__in=[held.host_id for held in mine]).update(observed_at=now)
        hosts = Host.objects.select_related("credential").in_bulk([held.host_id for held in mine])
        runs: dict[int, list[Run]] = {}
        running = Run.objects.filter(disk__host_id__in=list(hosts), state=Run.State.RUNNING)
        for run in running.select_related("disk__host"):
            runs.setdefault(run.disk.host_id, []).append(run)
        # The paces over every host held, from the runs of those due now: looks as if every run's figures were
        # read every PROGRESS_EVERY_S (as before pages asked), live figures by what is looked at.
        share = len(self._held) / len(mine)
        found = [run for found in runs.values() for run in found]
        pace = max(1.0, len(found) * share / (PROGRESS_READS_PER_S * watching.PROGRESS_EVERY_S))
        reads = sum(1 / watching.progress_every(run, now) for run in found) * share
        progress_pace = max(1.0, reads / PROGRESS_READS_PER_S)
        for held in mine:
            held.memory.pace, held.memory.progress_pace = pace, progress_pace
            self._plan(held, hosts[held.host_id], runs.get(held.host_id, []), now)

    def _plan(self, held: _Held, host: Host, runs: list[Run], now: datetime) -> None:
        load.METER.note_watched(held.host_id, len(runs))
        if not runs:
            self._release(held, host)
            return
        memory = held.memory
        memory.forget_all_but({run.pk for run in runs})
        watching.send_stops([run for run in runs if run.cancel_requested], now)
        held.watched = [run for run in runs if not run.cancel_requested]
        memory.host = host
        soon = now + watching.START_LEAD
        memory.due = [run for run in held.watched if run.not_before is None or run.not_before <= soon]
        self._submit(held, full=True)

    def _submit(self, held: _Held, *, full: bool) -> None:
        held.busy = True
        if full:
            held.next_full = time.monotonic() + watching.STEP_S
        held.next_quick = float("inf")
        if self._pool is None:
            self._outcomes.put(_step(held, full))
        else:
            self._pool.submit(self._step_in_thread, held, full)

    def _step_in_thread(self, held: _Held, full: bool) -> None:
        try:
            outcome = _step(held, full)
        except Exception as exc:  # anything else a step raised: said in the log, the host stepped again later
            log.exception("observing host %s failed", held.host_id)
            outcome = _Outcome(held, [], error=exc, full=full)
        finally:
            close_old_connections()  # a login's key check may have used this thread's connection
        self._outcomes.put(outcome)
        self._wake.set()

    def _write_outcomes(self) -> None:
        """What the steps that ended found, written at once: the runs that ended or died, one at a time (each its
        own state move); the live figures, heartbeats and telemetry of every host in one transaction."""
        now = timezone.now()
        progress: list[tuple[int, dict[str, Any]]] = []
        heartbeats: list[int] = []
        samples: list[HostSample] = []
        outcomes = []
        while True:
            try:
                outcomes.append(self._outcomes.get_nowait())
            except queue.Empty:
                break
        for outcome in outcomes:
            held = outcome.held
            held.busy = False
            if self._held.get(held.host_id) is not held:
                continue  # dropped or replaced while its step ran
            if outcome.error is not None:
                self._failed(outcome, now)
                continue
            progress += watching.act(outcome.findings, held.memory, now)
            if outcome.full:
                heartbeats += watching.keep_alive(held.watched, held.memory, now)
            if held.memory.sample is not None:
                samples.append(held.memory.sample)
                held.memory.sample = None
        watching.write(progress, heartbeats, samples, now)
        self._pace_quick_steps()

    def _failed(self, outcome: _Outcome, now: datetime) -> None:
        held, exc = outcome.held, outcome.error
        if not outcome.full:
            held.next_full = time.monotonic()  # a full step next, which says what failed
            return
        host = held.memory.host
        due = held.memory.due
        if host is not None and isinstance(exc, ssh.SSHError | remote.RemoteError):
            connecting.note_ssh_refusal(host, exc, run=due[0] if due else None)
        Run.objects.filter(pk__in=[run.pk for run in held.watched], state=Run.State.RUNNING).update(
            explanation=f"running; the last look at the host failed (the run goes on there): {exc}", heartbeat_at=now
        )
        held.memory.heartbeat_at = now
        held.next_full = time.monotonic() + watching.RETRY_S

    def _pace_quick_steps(self) -> None:
        """Hosts with a run due to end get quick steps, NEAR_END_STEP_S apart, or further apart when many hosts
        share QUICK_STEPS_PER_S."""
        ending = [held for held in self._held.values() if not held.busy and held.memory.ending()]
        if not ending:
            return
        every = max(watching.NEAR_END_STEP_S, len(ending) / QUICK_STEPS_PER_S)
        now = time.monotonic()
        for held in ending:
            if held.next_quick == float("inf"):
                held.next_quick = now + every
            # a full step due before the quick one is the quick one
            if held.next_quick >= held.next_full - watching.QUICK_STEP_SLACK_S:
                held.next_quick = float("inf")

    def _release(self, held: _Held, host: Host) -> None:
        """No running run is left: give the token back, unless a run started meanwhile. The token is cleared first
        and the runs counted after, and a launch counts after its run is running and then asks for an observer if
        there is none (steps.watch): between the two, one of them sees the other."""
        Host.objects.filter(pk=held.host_id, observer_token=held.token).update(observer_token="")
        self._drop(held)
        if Run.objects.filter(disk__host_id=held.host_id, state=Run.State.RUNNING).exists():
            steps.watch(host)

    def _drop(self, held: _Held) -> None:
        held.memory.close()
        if self._held.get(held.host_id) is held:
            del self._held[held.host_id]


def _step(held: _Held, full: bool) -> _Outcome:
    """A full step (watching.look) or a quick one (watching.look_ending, the runs due to end) of one host; a host
    that does not answer is an outcome too."""
    memory = held.memory
    assert memory.host is not None  # set by _plan, for this step or the full one before
    try:
        found = (
            watching.look(memory.host, memory.due, memory)
            if full
            else watching.look_ending(memory.host, memory.ending())
        )
    except (ssh.SSHError, remote.RemoteError) as exc:
        return _Outcome(held, [], error=exc, full=full)
    return _Outcome(held, found, full=full)


_OBSERVER: Observer | None = None
_OBSERVER_LOCK = threading.Lock()


def of_this_process() -> Observer:
    """This process's observer (made on first use; its loop starts with the first host it is handed)."""
    global _OBSERVER
    with _OBSERVER_LOCK:
        if _OBSERVER is None:
            _OBSERVER = Observer()
        return _OBSERVER


def stop_this_process() -> None:
    """The worker stops: its observer gives its hosts back (a process that observed nothing has nothing to do)."""
    with _OBSERVER_LOCK:
        if _OBSERVER is not None:
            _OBSERVER.stop()
