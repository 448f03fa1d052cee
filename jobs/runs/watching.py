"""Watching running runs without touching their hosts: one observation step per host covers every run on it.

A worker process's observer (jobs/runs/observer.py) steps each host it looks after; this module is what a step
does. Over the worker's persistent session to the host (jobs/sessions.py) a step only reads files and lists one
directory over SFTP, so nothing is logged in to or started on the host to look at a run:

- one listing of the host's done directory tells every run there that ended (its wrapper leaves a marker
  after `status`): the end of a run is seen within a step, STEP_S, whatever the number of runs; while a run
  is due to end, quick steps in between (every NEAR_END_STEP_S or so) list that directory and nothing else;
- the wrapper's pid and start time are read once;
- the tool's output is read from where the last step stopped, for the live figures: every PROGRESS_EVERY_S while
  someone looks at them (the run's page, the overview, the API: Run.want_progress), else every
  UNWATCHED_PROGRESS_EVERY_S, so that a fleet nobody watches costs a read a run every half minute;
- every LOOK_EVERY_S the wrapper's process is looked at in /proc, for a run killed without a trace (dead), a
  run directory removed (vanished) or never launched; a host without Linux's /proc is asked by a command,
  every COMMAND_LOOK_EVERY_S;
- once a second the host's telemetry (/proc counters) is read, for the run's verdicts.

Runs waiting on their host for their start time are not looked at until then. A finished run is handed to
its own `jobs.collect_run` task, so collecting many runs at once does not hold up the host's next step; a run
cancelled meanwhile to `jobs.stop_run`. A step's looks and live-figure reads stop after LOOK_BUDGET_S (those read
longest ago go first, the rest take their turn at the next step), so a host with hundreds of runs, or a slow one,
does not hold an observer thread for long.

The reading side (`look`, `look_ending`) talks to the host and never to the database; the writing side (`act`,
`write`) is the observer loop's, which writes what many hosts' steps found at once. What a step read (offsets, the
tail of the output, telemetry counters) is kept in the host's `HostMemory`, in this process: another worker's
observer reads afresh, which costs a longer read and changes nothing.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from jobs import environment, remote, ssh
from jobs import runners as runner
from jobs.hosts import connecting
from jobs.models import Host, HostSample, Run
from jobs.runs import states, steps
from jobs.telemetry import proc

log = logging.getLogger(__name__)

STEP_S = 1.0
# A run due to end within NEAR_END_S is looked at more often, so that its end is seen within a fraction of a
# second.
NEAR_END_S = 3.0
OVERRUN_WAIT_S = 15.0
# While a run is due to end within NEAR_END_S (or has overrun it by up to OVERRUN_WAIT_S), steps come
# this often: a listing of one directory, so the end is seen within a fraction of a second.
NEAR_END_STEP_S = 0.1
# A step this close to a full step's time is a full step (countdowns are not exact).
QUICK_STEP_SLACK_S = 0.05
PROGRESS_EVERY_S = 2.0
# A running run whose live figures nobody looks at (Run.progress_wanted_until passed) has them read this often: the
# overview's and the API's figures of it stay this fresh, and its page asks for more as it opens.
UNWATCHED_PROGRESS_EVERY_S = 30.0
LOOK_EVERY_S = 5.0
# A host with many runs has their output read and their wrapper looked at less often, so that one step stays
# a fraction of a second: every PROGRESS_EVERY_S or one second per RUNS_PER_SECOND_READ runs, whichever is
# longer (100 runs: live figures every 4 s, looks every 10 s); an observer with many runs over all its hosts
# slows them all alike (HostMemory.pace). Ends are seen as fast whatever the number.
RUNS_PER_SECOND_READ = 25
COMMAND_LOOK_EVERY_S = 30.0
RETRY_S = 6.0
# Runs are looked at from this long before their start time on.
START_LEAD = timedelta(seconds=1)
# A run's heartbeat moves at most this often while its observer steps it (the sweep's bound is sweeping.STALE_AFTER).
HEARTBEAT_EVERY = timedelta(seconds=5)
# A full step spends at most this long on looks and live figures after the one listing that tells the ends (a
# read or look under way is finished): on a host with many runs, or one slow to answer, they take turns.
LOOK_BUDGET_S = 0.5
# A cancelled run's stop is sent again when nothing stopped it for this long.
STOP_AGAIN_AFTER = timedelta(seconds=15)
# How long a launched wrapper may take to write its pid before it counts as dead.
START_GRACE = timedelta(seconds=60)
# A host's telemetry is read this often while it has running runs, each file up to this size.
TELEMETRY_EVERY_S = 1.0
TELEMETRY_MAX_BYTES = 2**20


@dataclass
class _Watch:
    """What this process read of one run so far."""

    offset: int = 0
    tail: bytes = b""
    pid: int | None = None
    started_epoch: float | None = None
    progress_at: float = float("-inf")
    looked_at: float = float("-inf")
    asked_at: float = float("-inf")


@dataclass
class Finding:
    run: Run
    state: str  # running | starting | finished | dead | vanished | unlaunched
    progress: dict[str, Any] | None = None
    started_epoch: float | None = None


@dataclass
class HostMemory:
    """What this process knows of one host it observes: what it read of each run, what its last full step loaded
    (for the quick steps in between), and the host's telemetry read last."""

    watches: dict[int, _Watch] = field(default_factory=dict)
    heartbeat_at: datetime | None = None
    host: Host | None = None
    due: list[Run] = field(default_factory=list)
    # The host's telemetry: the counters read last (jobs/telemetry/proc.py), and the files it does not have.
    reading: proc.Reading | None = None
    absent: set[str] = field(default_factory=set)
    files: ssh.OpenFiles | None = None  # its /proc files, kept open on the session's channel of their own
    # A second of telemetry read by the last step, not stored yet (the observer stores many hosts' at once).
    sample: HostSample | None = None
    # How much slower than LOOK_EVERY_S this host's runs are looked at (>= 1), and how much slower than
    # PROGRESS_EVERY_S (or UNWATCHED_PROGRESS_EVERY_S) their live figures are read: the observer's paces over all
    # its hosts (jobs/runs/observer.py PROGRESS_READS_PER_S).
    pace: float = 1.0
    progress_pace: float = 1.0

    def forget_all_but(self, run_ids: set[int]) -> None:
        for gone in set(self.watches) - run_ids:
            del self.watches[gone]
        for run_id in run_ids:
            self.watches.setdefault(run_id, _Watch())

    def ended(self, run: Run) -> None:
        self.watches.pop(run.pk, None)
        self.due = [other for other in self.due if other.pk != run.pk]

    def close(self) -> None:
        """The host is no longer this process's to observe: its kept-open telemetry files are closed."""
        if self.files is not None:
            self.files.close()
            self.files = None

    def ending(self) -> list[Run]:
        """The runs the last full step loaded that are due to end soon (the quick steps' runs)."""
        return [run for run in self.due if near_end(run)]


def _telemetry(conn: ssh.Connection, host: Host, due: list[Run], memory: HostMemory) -> None:
    """One second of the host's telemetry, kept for the observer to store (memory.sample), when a second has passed
    since the last reading: its /proc files read over the session's SFTP channel (nothing started on the host), kept
    open from one second to the next (jobs.ssh.files.OpenFiles), the devices of its running runs only. A host
    without /proc (AIX) is not asked again by this process."""
    if not due or "stat" in memory.absent:
        return
    if memory.reading is not None and time.time() - memory.reading.at < TELEMETRY_EVERY_S - QUICK_STEP_SLACK_S:
        return
    if memory.files is not None and memory.files.transfer is not conn:
        memory.files.close()  # opened on a session since replaced
        memory.files = None
    if memory.files is None:
        memory.files = conn.open_files({key: path for key, path in proc.FILES.items() if key not in memory.absent})
    begun = time.time()
    try:
        read = memory.files.read(max_bytes=TELEMETRY_MAX_BYTES)
    except ssh.SSHError:
        memory.files = None  # closed by the error: opened again next time
        raise
    texts: dict[str, str | None] = {}
    for key, data in read.items():
        if data is None:
            memory.absent.add(key)
        texts[key] = None if data is None else data.decode(errors="replace")
    reading = proc.reading(texts, (begun + time.time()) / 2, _devices_of(due))
    before, memory.reading = memory.reading, reading
    if before is not None and (found := proc.sample(before, reading)) is not None:
        memory.sample = HostSample(host=host, at=datetime.fromtimestamp(reading.at, tz=UTC), data=found)


def _devices_of(runs: list[Run]) -> set[str]:
    """The block devices whose counters matter to these runs: each one's device and its chain (its environment)."""
    return {name for run in runs for name in environment.chain_devices(run.environment)}


def look_ending(host: Host, runs: list[Run]) -> list[Finding]:
    """A quick step: the runs among these whose done marker is there (one listing per run directory base)."""
    with connecting.session(host) as conn:
        markers = _done_markers(conn, runs)
    return [Finding(run, "finished") for run in runs if str(run.uuid) in (markers[_base(run)] or ())]


def _done_markers(conn: ssh.Connection, runs: list[Run]) -> dict[str, set[str] | None]:
    """The done markers of each run directory base these runs are in: one listing per base."""
    return {base: remote.finished_runs(conn, base) for base in {_base(run) for run in runs}}


def _base(run: Run) -> str:
    return run.remote_dir.rpartition("/")[0]


def send_stops(runs: list[Run], now: datetime) -> None:
    """A cancelled run is stopped by its own task (the stop waits on the host); sent again if it died."""
    for run in runs:
        if run.heartbeat_at and now - run.heartbeat_at < STOP_AGAIN_AFTER:
            continue
        if Run.objects.filter(pk=run.pk, heartbeat_at=run.heartbeat_at).update(heartbeat_at=now):
            steps.send("stop", run)


def look(host: Host, due: list[Run], memory: HostMemory) -> list[Finding]:
    """A full step's reads of `due` on `host` (see _look), over the worker's session; logged in again once if the
    session dropped. Raises ssh.SSHError or remote.RemoteError when the host does not answer."""
    if not due:
        return []
    try:
        with connecting.session(host) as conn:
            return _look(conn, due, memory)
    except ssh.SSHError as exc:
        if exc.reason != "channel":
            raise
    # The session dropped (sshd restarted, a network blip): the pool forgot it, so this logs in again.
    with connecting.session(host) as conn:
        return _look(conn, due, memory)


def _look(conn: ssh.Connection, due: list[Run], memory: HostMemory) -> list[Finding]:
    """Every run that ended (one listing), then the others' looks and live figures until LOOK_BUDGET_S is
    spent (one run at least), those read longest ago first: the rest wait for the next step, so a slow host
    does not hold the thread (nor the next end) for the reads of all its runs. A run not reached has no
    finding; its heartbeat moves all the same (keep_alive)."""
    markers = _done_markers(conn, due)
    findings, others = [], []
    for run in due:
        done = markers[_base(run)]
        if done is not None and str(run.uuid) in done:
            findings.append(Finding(run, "finished"))
        else:
            others.append(run)
    if memory.host is not None:
        _telemetry(conn, memory.host, due, memory)
    others.sort(key=lambda run: _last_read(memory.watches[run.pk]))
    until = time.monotonic() + LOOK_BUDGET_S
    now = timezone.now()
    for run in others:
        done = markers[_base(run)]
        watch = memory.watches[run.pk]
        every = progress_every(run, now, runs=len(due), pace=memory.progress_pace)
        findings.append(_look_at(conn, run, watch, markers=done is not None, runs=len(due), pace=memory.pace,
                                 progress_every_s=every))  # fmt: skip
        if time.monotonic() >= until:
            break  # at least one run a step, however slow the host
    return findings


def _last_read(watch: _Watch) -> float:
    """When this process last read anything of the run (-inf: never, it goes first)."""
    return float("-inf") if watch.pid is None else min(watch.progress_at, watch.looked_at)


def progress_every(run: Run, now: datetime, *, runs: int = 1, pace: float = 1.0) -> float:
    """How often the run's live figures are read: PROGRESS_EVERY_S while someone looks at them, slower on a host
    with many runs (RUNS_PER_SECOND_READ); UNWATCHED_PROGRESS_EVERY_S while nobody does; both times the observer's
    progress pace."""
    if not run.progress_wanted(now):
        return UNWATCHED_PROGRESS_EVERY_S * pace
    return PROGRESS_EVERY_S * max(pace, runs / RUNS_PER_SECOND_READ / PROGRESS_EVERY_S)


def _look_at(
    conn: ssh.Connection,
    run: Run,
    watch: _Watch,
    *,
    markers: bool,
    runs: int = 1,
    pace: float = 1.0,
    progress_every_s: float = PROGRESS_EVERY_S,
) -> Finding:
    now = time.monotonic()
    scale = max(pace, runs / RUNS_PER_SECOND_READ / PROGRESS_EVERY_S)
    if watch.pid is None or watch.started_epoch is None:
        seen = remote.sighting(conn, run.remote_dir)
        watch.pid, watch.started_epoch = seen.pid, seen.started_epoch
    state = "running" if watch.pid is not None else "starting"
    # Without a done directory (a run launched before there were markers) only a look tells the end.
    if not markers or watch.pid is None or now - watch.looked_at >= LOOK_EVERY_S * scale:
        watch.looked_at = now
        state = remote.look(conn, run.remote_dir, watch.pid)
        if state == "unknown":
            state = _ask_by_command(conn, run, watch, now)
    finding = Finding(run, state, started_epoch=watch.started_epoch)
    tool = runner.for_parameters(run.parameters)
    if state == "running" and tool.live_output and now - watch.progress_at >= progress_every_s:
        watch.progress_at = now
        offset, data = remote.read_output(conn, f"{run.remote_dir}/{tool.output_file}", watch.offset)
        joined = watch.tail + data if offset - len(data) == watch.offset else data
        watch.offset, watch.tail = offset, runner.progress_tail(joined)
        finding.progress = tool.progress(watch.tail.decode(errors="replace"), run.parameters)
    return finding


def _ask_by_command(conn: ssh.Connection, run: Run, watch: _Watch, now: float) -> str:
    """A host without Linux's /proc (AIX) is asked whether the wrapper lives by a command, rarely."""
    if now - watch.asked_at < COMMAND_LOOK_EVERY_S:
        return "running"
    watch.asked_at = now
    tool = runner.for_parameters(run.parameters)
    return remote.poll(conn, run.remote_dir, tool.output_file).state


def act(findings: list[Finding], memory: HostMemory, now: datetime) -> list[tuple[int, dict[str, Any]]]:
    """What the findings mean: an ended run goes to collection (its own task), a dead or vanished one is lost, each
    at once; the live figures of the others are returned, for the observer to write with other hosts' (`write`)."""
    progress: list[tuple[int, dict[str, Any]]] = []
    for finding in findings:
        run = finding.run
        if finding.state == "finished":
            memory.ended(run)
            if states.move(run, (Run.State.RUNNING,), Run.State.COLLECTING, explanation="collecting results"):
                steps.send("collect", run)
        elif finding.state in ("vanished", "dead", "unlaunched"):
            memory.ended(run)
            states.finish(run, Run.State.LOST, states.lost_reason(finding.state))
        elif finding.state == "starting" and now - (run.started_at or now) > START_GRACE:
            memory.ended(run)
            states.finish(run, Run.State.LOST, "the run's wrapper never started on the host")
        elif fields := _progress_fields(run, finding, now):
            progress.append((run.pk, fields))
    return progress


def _progress_fields(run: Run, finding: Finding, now: datetime) -> dict[str, Any]:
    """What a look tells of a running run: its host-clock start, its live figures, that it runs."""
    fields: dict[str, Any] = {}
    if finding.started_epoch:
        started = datetime.fromtimestamp(finding.started_epoch, tz=UTC)
        if started != run.started_at:
            fields["started_at"] = run.started_at = started
    if finding.progress is not None:
        expected = runner.expected_seconds(run.parameters)
        started_at = run.started_at or now
        fields["progress"] = finding.progress | Run.clock(started_at, expected, now) | {"expected_s": expected}
    if run.explanation != "running":
        fields["explanation"] = "running"
    return fields


def keep_alive(runs: list[Run], memory: HostMemory, now: datetime) -> list[int]:
    """The runs whose heartbeat is due to move (every run the host's observer looks after, waiting ones too, every
    HEARTBEAT_EVERY): the sweep leaves them be."""
    if memory.heartbeat_at and now - memory.heartbeat_at < HEARTBEAT_EVERY:
        return []
    memory.heartbeat_at = now
    return [run.pk for run in runs]


def write(progress: list[tuple[int, dict[str, Any]]], heartbeats: list[int], samples: list[HostSample],
          now: datetime) -> None:  # fmt: skip
    """What a round of steps found, over many hosts, in one transaction: one write lock instead of one per run."""
    if not (progress or heartbeats or samples):
        return
    with transaction.atomic():
        for run_id, fields in progress:
            Run.objects.filter(pk=run_id, state=Run.State.RUNNING).update(heartbeat_at=now, **fields)
        if heartbeats:
            Run.objects.filter(pk__in=heartbeats, state=Run.State.RUNNING).update(heartbeat_at=now)
        if samples:
            HostSample.objects.bulk_create(samples)


def _seconds_left(run: Run) -> float:
    started = run.started_at or timezone.now()
    return runner.expected_seconds(run.parameters) - (timezone.now() - started).total_seconds()


def near_end(run: Run) -> bool:
    """Due to end within NEAR_END_S, or past its expected end by less than OVERRUN_WAIT_S (a slow file layout
    takes a while; one far past its end is looked at at the usual pace again)."""
    return -OVERRUN_WAIT_S < _seconds_left(run) < NEAR_END_S
