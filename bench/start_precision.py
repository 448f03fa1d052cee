"""How close to their planned moment scheduled runs start: 50 targets, 1 s apart, with a real worker and beat.

    .venv/bin/python bench/start_precision.py [--db sqlite|postgres] [--concurrency 16] [--targets 50]
        [--stagger 1] [--lead 10] [--timeout 300] [--per-run] [--plain-worker] [--json]

Everything runs on this machine in a fresh temporary directory: a migrated database (SQLite, or with
--db postgres a database created on 127.0.0.1 and dropped afterwards), an embedded redis-server, a private
sshd on 127.0.0.1 and 50 directory disks on that one host, each its own directory. One interval schedule
(every 60 min, first fire --lead seconds after the stack is up, stagger --stagger s) runs one short fio
profile on all of them: 4k randread, psync, iodepth=1, runtime 2 s time_based, 4 MiB file, direct=0.
A real Celery worker (`--pool threads --concurrency N`) and ONE `celery beat` ticking every second
(BENCHWEB_TICK_SECONDS=1; --tick-seconds to change it) do the rest, as in production.

For every run the report gives |started_at - not_before| and |queued_at - not_before| (the Run fields):
p50, p95 and max, and how many runs succeeded. Targets: p95 <= 2 s and max <= 5 s for started_at. The
worker is started through a thin wrapper that records when each task begins and ends (Celery's task_prerun
and task_postrun signals) so the report can say where the time went; --plain-worker starts the exact
`celery -A benchweb worker` command instead. Exit status: 0 targets met, 1 missed, 2 the measurement
failed, 130 interrupted. Whatever happens, every process started here is stopped (worker, beat, redis,
sshd, detached fio runs), the temporary directory is removed and a PostgreSQL database is dropped.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import itertools
import json
import os
import pwd
import re
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import benchkit
from benchkit import (
    PG_SERVER,
    ROOT,
    BenchError,
    add_database_options,
    add_smoke_option,
    code_version,
    configure_django,
    fmt,
    interrupt_on_signals,
    loopback_host,
    parse_args,
    percentile,
    run_guarded,
    say,
    server_version,
    spawn,
    sshd_counts,
    start_redis,
    start_sshd,
    verdict_status,
    wait_until,
    worker_options,
)

DEFAULT_PG_URL = f"{PG_SERVER}/benchweb_precision"
TARGET_P95_S = 2.0
TARGET_MAX_S = 5.0
TRACE_ENV = "BENCHWEB_BENCH_TRACE"
_BEAT_SENT = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}): INFO/\w+\] Scheduler: Sending due task tick")


# ----------------------------------------------------------------------------------------- the worker wrapper


def worker_shim(celery_argv: list[str]) -> None:
    """`celery worker` as usual, plus one trace line per task start and end (epoch seconds, task, args; an end
    also the CPU seconds the task's thread used, time.thread_time)."""
    sys.path.insert(0, str(ROOT))
    from celery.signals import task_postrun, task_prerun

    from benchweb.celery import app

    lock = threading.Lock()
    trace = open(os.environ[TRACE_ENV], "a", buffering=1)  # open for the worker's whole life

    began: dict[str, float] = {}

    def write(kind: str, task: Any, task_id: str, args: Any, extra: str = "", cpu_s: float | None = None) -> None:
        line = json.dumps([kind, time.time(), getattr(task, "name", "?"), task_id, list(args or ()), extra, cpu_s])
        with lock:
            trace.write(line + "\n")

    @task_prerun.connect(weak=False)
    def _started(task_id: str, task: Any, args: Any = (), **_: Any) -> None:
        began[task_id] = time.thread_time()
        write("start", task, task_id, args)

    @task_postrun.connect(weak=False)
    def _ended(task_id: str, task: Any, args: Any = (), retval: Any = None, **_: Any) -> None:
        start = began.pop(task_id, None)
        cpu = None if start is None else time.thread_time() - start
        write("end", task, task_id, args, str(retval)[:200], cpu)

    app.worker_main(["worker", *celery_argv])


# ----------------------------------------------------------------------------------------- the stack


class Stack(benchkit.Stack):
    """benchkit's stack, with the directory disks, the worker's trace and the environment of worker and beat."""

    def __init__(self, prefix: str, tick_seconds: float = 1.0) -> None:
        super().__init__(prefix)
        self.tick_seconds = tick_seconds
        self.targets = self.tmp / "targets"
        self.trace = self.tmp / "trace.jsonl"

    def env(self) -> dict[str, str]:
        from django.conf import settings

        return dict(
            os.environ,
            BENCHWEB_FIELD_KEYS=",".join(settings.FIELD_KEYS),
            BENCHWEB_TICK_SECONDS=f"{self.tick_seconds:g}",
            BENCHWEB_LOG_LEVEL="INFO",
            **{TRACE_ENV: str(self.trace)},
        )


class CpuMeter:
    """CPU seconds by owner while the schedule runs, sampled every 0.5 s from /proc (psutil): the worker, beat,
    redis, sshd and its sessions, the benchmark runs themselves (fio and its wrappers, detached under setsid),
    this script, and everything else on the machine.

    A process this script started counts as its whole tree: at each sample, the sum over it and its live
    descendants of user + system + children's user + system (cutime, cstime: what each has reaped). A process
    that ends inside the tree is reaped by its parent there, so its whole life moves, once, from the live sum into
    its parent's children's times: the tree never counts a process twice nor misses one shorter than a sample.
    That matters for sshd: the listener reaps a connection's process only when the connection closes, and a
    worker's connection lives as long as the worker, so the listener's own children's times stay 0 while its
    connection's process reaps every session and command shell (bench/fanout.py once printed 0.0 CPU-s for
    sshd so). The descendants are not sampled on their own, which would count them twice. Other processes are
    sampled while they live: one shorter than a sample is missed, and the machine-wide busy time, split by
    kind, is the ground truth."""

    INTERVAL_S = 0.5

    def __init__(self, stack: Stack, nice_fio: int = 0) -> None:
        self.stack = stack
        # With nice_fio, every fio of the runs is given that niceness when a sample first sees it.
        self.nice_fio = nice_fio
        self.reniced = 0
        self.seconds: dict[str, float] = {}
        self._last: dict[tuple[int, float], float] = {}
        self._owner: dict[tuple[int, float], str] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self.busy_s = 0.0
        self.wall_s = 0.0
        self.machine: dict[str, float] = {}
        self._machine0: dict[str, float] = {}
        self._t0 = 0.0
        self._busy0 = 0.0

    @staticmethod
    def _machine() -> dict[str, float]:
        import psutil

        t = psutil.cpu_times()
        return {
            "user": t.user + t.nice,  # guest time is part of user on Linux
            "system": t.system,
            "irq+softirq": getattr(t, "irq", 0.0) + getattr(t, "softirq", 0.0),
            "steal": getattr(t, "steal", 0.0),
        }

    def _busy(self) -> float:
        return sum(self._machine().values())

    def start(self) -> None:
        self._t0, self._busy0 = time.monotonic(), self._busy()
        self._machine0 = self._machine()
        self._sample(baseline=True)  # what ran before the start is not counted
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._sample()
        self.wall_s, self.busy_s = time.monotonic() - self._t0, self._busy() - self._busy0
        self.machine = {kind: value - self._machine0[kind] for kind, value in self._machine().items()}

    def _loop(self) -> None:
        while not self._stop.wait(self.INTERVAL_S):
            self._sample()

    def _roots(self) -> dict[int, str]:
        s = self.stack
        roots = {os.getpid(): "this script"}
        for name, process in (("worker", s.worker), ("beat", s.beat), ("redis", s.redis)):
            if process is not None:
                roots[process.pid] = name
        for sshd in s.all_sshds():
            roots[sshd.process.pid] = "sshd, its sessions and their commands"
        return roots

    def _classify(self, process: Any) -> str:
        import psutil

        roots = self._roots()
        with contextlib.suppress(psutil.Error, OSError):
            if process.pid in roots:
                return roots[process.pid]
            if any(ancestor.pid in roots for ancestor in process.parents()):
                return ""  # counted with its root once reaped
            runs = str(self.stack.runs_base)
            if runs in " ".join(process.cmdline()) or process.cwd().startswith(runs):
                return "benchmark runs (fio and wrappers, detached)"
        return "other processes (not started here)"

    def _sample(self, baseline: bool = False) -> None:
        import psutil

        roots = self._roots()
        for process in psutil.process_iter(["cpu_times", "create_time"]):
            with contextlib.suppress(psutil.Error, OSError, TypeError):
                key = (process.pid, process.info["create_time"])
                times = process.info["cpu_times"]
                total = tree_cpu_s(process) if process.pid in roots else times.user + times.system
                if key not in self._owner:
                    self._owner[key] = self._classify(process)
                    if self.nice_fio and self._owner[key].startswith("benchmark runs") and process.name() == "fio":
                        os.setpriority(os.PRIO_PROCESS, process.pid, self.nice_fio)
                        self.reniced += 1
                    # Processes already there count from now; processes born later count whole.
                    self._last[key] = total if baseline else 0.0
                owner = self._owner[key]
                if owner:
                    self.seconds[owner] = self.seconds.get(owner, 0.0) + total - self._last.get(key, 0.0)
                self._last[key] = total


def tree_cpu_s(root: Any) -> float:
    """CPU seconds of a process's whole tree: it and its live descendants, each with what it has reaped."""
    return _cpu_s_of([root, *root.children(recursive=True)])


def trees_cpu_s(roots: list[int]) -> float:
    """tree_cpu_s of several roots from one reading of every process's parent (tree_cpu_s reads them all for each
    root: the 14 sshds of a 2,000-run fleet took seconds)."""
    import psutil

    children: dict[int, list[psutil.Process]] = {}
    for process in psutil.process_iter(["ppid"]):
        children.setdefault(process.info["ppid"], []).append(process)
    tree, todo = [], [psutil.Process(pid) for pid in roots]
    while todo:
        process = todo.pop()
        tree.append(process)
        todo += children.get(process.pid, [])
    return _cpu_s_of(tree)


def _cpu_s_of(processes: list[Any]) -> float:
    import psutil

    total = 0.0
    for process in processes:
        with contextlib.suppress(psutil.Error):
            t = process.cpu_times()
            total += t.user + t.system + t.children_user + t.children_system
    return total


def start_worker(stack: Stack, concurrency: int, plain: bool) -> None:
    options = worker_options(concurrency, "precision")
    if plain:
        argv = [sys.executable, "-m", "celery", "-A", "benchweb", "worker", *options]
    else:
        argv = [sys.executable, str(Path(__file__).resolve()), "--worker-shim", *options]
    benchkit.start_worker(stack, argv, stack.env())


def start_beat(stack: Stack) -> None:
    argv = [sys.executable, "-m", "celery", "-A", "benchweb", "beat", "-l", "INFO", "-s",
            str(stack.tmp / "beat-schedule"), "--pidfile="]  # fmt: skip
    stack.beat = spawn(argv, stack.beat_log, stack.env())
    wait_until("celery beat", lambda: b"beat: Starting" in stack.beat_log.read_bytes(), stack.beat, 60,
               stack.beat_log)  # fmt: skip


def make_objects(
    stack: Stack, private_key: str, n_targets: int, rate_iops: int, runtime_s: int = 2
) -> tuple[Any, list[Any], Any]:
    """Team, credential, the loopback host with its pinned key, n directory disks and the profile."""
    from jobs.models import Disk

    host = loopback_host(stack, private_key, "precision bench")
    team = host.team
    disks = []
    for i in range(n_targets):
        target = stack.targets / f"d{i:02d}"
        target.mkdir(parents=True)
        disks.append(Disk.objects.create(host=host, label=f"d{i:02d}", target_path=str(target), disk_type="custom"))
    return team, disks, make_profile(team, runtime_s, rate_iops)


def make_profile(team: Any, runtime_s: int, rate_iops: int, size_mib: int = 4) -> Any:
    """4k randread, psync, iodepth=1, time_based, a size_mib MiB file, direct=0; fio rate_iops=N when N > 0."""
    from jobs.models import Profile

    # The warm-up asks for a 2 s profile too: the same runtime, rate and size is the same profile.
    name = f"precision 4k randread {runtime_s} s" + (f" at {rate_iops} IOPS" if rate_iops else "")
    name += f" on {size_mib} MiB" if size_mib != 4 else ""
    profile, _ = Profile.objects.get_or_create(team=team, name=name, defaults=dict(
        tool="fio", rw="randread", block_size_bytes=4096, iodepth=1, jobs=1, runtime_s=runtime_s, time_based=True,
        ioengine="psync", direct=False, size_bytes=size_mib * 2**20,
        extra_options={"rate_iops": rate_iops} if rate_iops else {},
    ))  # fmt: skip
    return profile


def idle_yardsticks(stack: Stack, host: Any, profile: Any, n: int = 5) -> dict[str, float]:
    """Before the fire, with nothing else of ours running: an SSH login and one command as the worker makes
    them (median of n), and one whole run on a spare disk from request to final (it also warms the worker)."""
    from jobs.hosts import connecting
    from jobs.models import Disk, Run
    from jobs.runs import queueing

    logins, commands = [], []
    for _ in range(n):
        t0 = time.perf_counter()
        with connecting.connect(host) as conn:
            t1 = time.perf_counter()
            conn.run("true", timeout=30)
            logins.append(t1 - t0)
            commands.append(time.perf_counter() - t1)
    # sshd runs every command as `<login shell> -c <command>`; bash then reads ~/.bashrc when it sees
    # SSH_CLIENT (Debian builds bash so). The same start-up, locally and without SSH:
    user = pwd.getpwuid(os.geteuid())
    env = {"HOME": user.pw_dir, "USER": user.pw_name, "PATH": "/usr/local/bin:/usr/bin:/bin",
           "SSH_CLIENT": "127.0.0.1 40000 22"}  # fmt: skip
    shell_starts = []
    for _ in range(n):
        t0 = time.perf_counter()
        subprocess.run([user.pw_shell, "-c", "true"], env=env, cwd=user.pw_dir, stdin=subprocess.DEVNULL,
                       capture_output=True, timeout=30, check=False)  # fmt: skip
        shell_starts.append(time.perf_counter() - t0)
    target = stack.targets / "warm-up"
    target.mkdir(parents=True)
    disk = Disk.objects.create(host=host, label="warm-up", target_path=str(target), disk_type="custom")
    t0 = time.time()
    run = queueing.request_run(disk, profile)
    deadline = time.monotonic() + 60
    while Run.objects.filter(pk=run.pk).values_list("state", flat=True).get() not in Run.FINAL_STATES:
        if time.monotonic() > deadline:
            raise BenchError(f"the warm-up run {run.pk} was not final after 60 s")
        time.sleep(0.05)
    run.refresh_from_db()
    if run.state != Run.State.SUCCEEDED:
        raise BenchError(f"the warm-up run ended {run.state}: {run.explanation}")
    time.sleep(1)  # its last poll cleans up on the host
    return {
        "ssh login (connect, key exchange, auth)": statistics.median(logins),
        "ssh command `true` on that connection": statistics.median(commands),
        "local `$SHELL -c true` as sshd starts it (no SSH)": statistics.median(shell_starts),
        "warm-up run: queued_at -> started_at (launch)": run.started_at.timestamp() - run.queued_at.timestamp(),
        "warm-up run: started_at -> finished_at": run.finished_at.timestamp() - run.started_at.timestamp(),
        "warm-up run: request -> final": time.time() - t0 - 1,
    }


def make_schedule(
    team: Any,
    disks: list[Any],
    profile: Any,
    *,
    lead_s: float,
    stagger_s: int,
    fire_at: datetime | None = None,
    name: str = "precision",
) -> Any:
    """An interval schedule (every 60 min) of the profile on the disks, first firing at fire_at (default: lead_s
    from now, on a whole second)."""
    from django.utils import timezone

    from jobs.models import Schedule, ScheduleProfile

    fire_at = fire_at or (timezone.now() + timedelta(seconds=lead_s)).replace(microsecond=0)
    schedule = Schedule(team=team, name=name, kind="interval", interval_minutes=60, starts_at=fire_at,
                        stagger_s=stagger_s)  # fmt: skip
    schedule.full_clean(exclude=["team"])
    schedule.save()
    schedule.targets.set(disks)
    ScheduleProfile.objects.create(schedule=schedule, profile=profile, position=0)
    if schedule.next_fire_at != fire_at:
        raise BenchError(f"the schedule's first fire is {schedule.next_fire_at}, not {fire_at}")
    return schedule


# ----------------------------------------------------------------------------------------- measuring


@dataclass
class RunRow:
    run_id: int
    disk: str
    state: str
    explanation: str
    not_before: float
    queued_at: float | None
    started_at: float | None
    finished_at: float | None
    launch_start: float | None = None  # when a worker thread began the launch task (from the trace)
    launch_end: float | None = None
    claimed_by_tick: float | None = None  # start of the tick task that queued it
    host: str = ""
    # When the tool ended by the host's clock: started_at + progress["elapsed_s"] (0.1 s resolution), given
    # only when the run says that elapsed_s is the host's (progress["elapsed_from"] == "host").
    tool_end: float | None = None

    @property
    def start_error(self) -> float | None:
        return None if self.started_at is None else abs(self.started_at - self.not_before)

    @property
    def queue_error(self) -> float | None:
        return None if self.queued_at is None else abs(self.queued_at - self.not_before)


@dataclass
class Trace:
    ticks: list[tuple[float, float | None, str]] = field(default_factory=list)  # (start, end, result)
    launches: dict[int, tuple[float, float | None]] = field(default_factory=dict)
    polls: int = 0
    launch_tasks: int = 0
    beat_sends: list[float] = field(default_factory=list)


def runs_of(schedule: Any) -> Any:
    """The runs of one schedule, or of a list of schedules."""
    from jobs.models import Run

    if isinstance(schedule, list | tuple):
        return Run.objects.filter(schedule__in=schedule)
    return Run.objects.filter(schedule=schedule)


def wait_for_runs(schedule: Any, n: int, deadline: float, each_look: Callable[[list[str]], None] | None = None) -> bool:
    """Until the n runs of the schedule (or list of schedules) are made and final; False at the deadline.
    each_look(the runs' states) is called at every look, every 0.25 s."""
    from jobs.models import Run

    last_report = 0.0
    while True:
        states = list(runs_of(schedule).values_list("state", flat=True))
        if each_look is not None:
            each_look(states)
        final = sum(state in Run.FINAL_STATES for state in states)
        if len(states) == n and final == n:
            return True
        if time.monotonic() - last_report > 5:
            counts = {s: states.count(s) for s in sorted(set(states))}
            say(f"  {len(states)}/{n} runs made, {final} final: {counts}")
            last_report = time.monotonic()
        if time.monotonic() > deadline:
            return False
        time.sleep(0.25)


def read_trace(stack: Stack) -> Trace:
    trace = Trace()
    if stack.trace.exists():
        open_ticks: dict[str, float] = {}
        for line in stack.trace.read_text().splitlines():
            with contextlib.suppress(ValueError):
                kind, at, name, task_id, args, extra, *_ = json.loads(line)
                if name == "jobs.tick":
                    if kind == "start":
                        open_ticks[task_id] = at
                    else:
                        trace.ticks.append((open_ticks.pop(task_id, at), at, extra))
                elif name == "jobs.launch_run" and args:
                    # The first launch task of a run; a second one (re-sent by the sweep) is only counted.
                    start, end = trace.launches.get(args[0], (None, None))
                    if kind == "start":
                        trace.launch_tasks += 1
                        start = at if start is None else start
                    elif end is None:
                        end = at
                    trace.launches[args[0]] = (start if start is not None else at, end)
                elif name == "jobs.poll_run" and kind == "start":
                    trace.polls += 1
        trace.ticks += [(start, None, "") for start in open_ticks.values()]
        trace.ticks.sort()
    if stack.beat_log.exists():
        for line in stack.beat_log.read_text(errors="replace").splitlines():
            if match := _BEAT_SENT.match(line):
                # Celery logs local wall-clock time with milliseconds.
                trace.beat_sends.append(datetime.strptime(match.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp())
    return trace


def collect(schedule: Any, trace: Trace) -> list[RunRow]:
    """One row per run of the schedule (or list of schedules), in order of not_before."""
    rows = []
    for run in runs_of(schedule).select_related("disk__host").order_by("not_before", "pk"):
        progress = run.progress or {}
        elapsed = progress.get("elapsed_s") if progress.get("elapsed_from") == "host" else None
        row = RunRow(
            run_id=run.pk, disk=run.disk.label, state=run.state, explanation=run.explanation,
            not_before=run.not_before.timestamp(), queued_at=_ts(run.queued_at), started_at=_ts(run.started_at),
            finished_at=_ts(run.finished_at), host=run.disk.host.name,
            tool_end=None if elapsed is None or run.started_at is None else run.started_at.timestamp() + elapsed,
        )  # fmt: skip
        if run.pk in trace.launches:
            row.launch_start, row.launch_end = trace.launches[run.pk]
        if row.queued_at is not None:
            before = [start for start, _, _ in trace.ticks if start <= row.queued_at]
            row.claimed_by_tick = before[-1] if before else None
        rows.append(row)
    return rows


def _ts(moment: datetime | None) -> float | None:
    return None if moment is None else moment.timestamp()


def measure(args: argparse.Namespace, stack: Stack) -> dict[str, Any]:
    configure_django(stack, args.db, args.database_url)
    say("starting redis, sshd and the worker ...")
    start_redis(stack)
    private_key = start_sshd(stack)
    team, disks, profile = make_objects(stack, private_key, args.targets, args.rate_iops)
    start_worker(stack, args.concurrency, args.plain_worker)
    say("idle yardsticks: SSH logins and commands, one warm-up run ...")
    yardsticks = idle_yardsticks(stack, disks[0].host, profile)
    sshd_offset = stack.sshd.log_path.stat().st_size
    meter = CpuMeter(stack)
    start_beat(stack)  # beat ticks from here on; the schedule below fires --lead seconds after it is saved
    schedule = make_schedule(team, disks, profile, lead_s=args.lead, stagger_s=args.stagger)
    meter.start()
    fire_at = schedule.next_fire_at
    lead_left = fire_at.timestamp() - time.time()
    say(f"schedule fires at {fire_at:%H:%M:%S} UTC ({lead_left:.1f} s from now, beat running); {args.targets} "
        f"targets {args.stagger} s apart; waiting up to {args.timeout:g} s for every run to finish")  # fmt: skip
    load_before = os.getloadavg()[0]
    try:
        done = wait_for_runs(schedule, args.targets, time.monotonic() + args.timeout)
    finally:
        meter.stop()
    load_after = os.getloadavg()[0]
    time.sleep(1.5)  # the last tasks' end lines
    trace = read_trace(stack)
    rows = collect(schedule, trace)
    config = {
        "db": args.db, "targets": args.targets, "stagger_s": args.stagger, "concurrency": args.concurrency,
        "lead_s": args.lead, "fire_at": fire_at.isoformat(), "cpus": os.cpu_count(),
        "load_1min_before": load_before, "load_1min_after": load_after, "all_final": done,
        "traced_worker": not args.plain_worker, "database": server_version(), "rate_iops": args.rate_iops,
        "code": code_version(), "tick_s": args.tick_seconds,
    }  # fmt: skip
    return {
        "config": config,
        "rows": rows,
        "trace": trace,
        "yardsticks": yardsticks,
        "sshd": sshd_counts(stack, sshd_offset),
        "cpu": {
            "wall_s": meter.wall_s,
            "machine_busy_s": meter.busy_s,
            "by_owner_s": meter.seconds,
            "machine_s": meter.machine,
        },
        "worker_log_tail": stack.worker_log.read_text(errors="replace")[-4000:] if not done else "",
    }


# ----------------------------------------------------------------------------------------- output


def percentiles(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"n": 0, "p50": None, "p95": None, "max": None}
    ordered = sorted(values)
    return {"n": len(ordered), "p50": statistics.median(ordered), "p95": percentile(ordered, 95), "max": ordered[-1]}


def summarise(result: dict[str, Any]) -> dict[str, Any]:
    rows: list[RunRow] = result["rows"]
    trace: Trace = result["trace"]
    config = result["config"]
    started = percentiles([r.start_error for r in rows if r.start_error is not None])
    queued = percentiles([r.queue_error for r in rows if r.queue_error is not None])
    phases = {
        "queued_at - not_before (tick lag)": [r.queued_at - r.not_before for r in rows if r.queued_at],
        "launch task start - queued_at (queue wait)": [
            r.launch_start - r.queued_at for r in rows if r.launch_start and r.queued_at
        ],
        "started_at - launch task start (SSH launch)": [
            r.started_at - r.launch_start for r in rows if r.started_at and r.launch_start
        ],
        "started_at - not_before (signed)": [r.started_at - r.not_before for r in rows if r.started_at],
        "finished_at - started_at": [r.finished_at - r.started_at for r in rows if r.finished_at and r.started_at],
    }
    # The ticks from just before the first slot to just after the last run ended.
    low = min((r.not_before for r in rows), default=0) - 5
    high = max((r.finished_at or r.not_before for r in rows), default=0) + 5
    ticks = [t for t in trace.ticks if low <= t[0] <= high]
    gaps = [b[0] - a[0] for a, b in itertools.pairwise(ticks)]
    durations = [end - start for start, end, _ in ticks if end is not None]
    sends = [s for s in trace.beat_sends if low <= s <= high]
    send_to_start = []
    for start, _, _ in ticks:
        earlier = [s for s in sends if s <= start + 0.002]  # beat logs milliseconds
        if earlier:
            send_to_start.append(start - earlier[-1])
    succeeded = sum(r.state == "succeeded" for r in rows)
    ok_p95 = started["p95"] is not None and started["p95"] <= TARGET_P95_S
    ok_max = started["max"] is not None and started["max"] <= TARGET_MAX_S
    complete = len(rows) == config["targets"] and config["all_final"] and started["n"] == config["targets"]
    return {
        "started": started,
        "queued": queued,
        "phases": {name: percentiles(values) for name, values in phases.items()},
        "ticks": {
            "count": len(ticks),
            "period": percentiles(gaps),
            "duration": percentiles(durations),
            "beat_send_to_worker_start": percentiles(send_to_start),
        },
        "poll_tasks": trace.polls,
        "launch_tasks": trace.launch_tasks,
        "succeeded": succeeded,
        "states": {s: sum(r.state == s for r in rows) for s in sorted({r.state for r in rows})},
        "verdict": {"p95": ok_p95, "max": ok_max, "complete": complete, "all": ok_p95 and ok_max and complete},
    }


_f = functools.partial(fmt, digits=3)


def print_report(result: dict[str, Any], summary: dict[str, Any], per_run: bool) -> None:
    c = result["config"]
    print(f"{c['targets']} directory targets on one loopback sshd host, one interval schedule, stagger "
          f"{c['stagger_s']} s, fio 4k randread psync QD1 2 s time_based 4 MiB direct=0; "
          f"first fire {c['fire_at']}")  # fmt: skip
    if c["rate_iops"]:
        print(f"fio throttled: rate_iops={c['rate_iops']}")
    print(f"worker: --pool threads --concurrency {c['concurrency']}{' (traced)' if c['traced_worker'] else ''}; "
          f"one beat, tick every {c['tick_s']:g} s; database {c['database']}; redis embedded")  # fmt: skip
    print(f"code: {c['code']}")
    print(f"machine: {c['cpus']} CPUs, 1-minute load average {c['load_1min_before']:.2f} before the fire, "
          f"{c['load_1min_after']:.2f} at the end\n")  # fmt: skip
    if per_run:
        print(f"{'run':>5} {'disk':<5} {'slot s':>7} {'queued':>8} {'launch':>8} {'started':>8} {'finished':>9} "
              f"{'launch task s':>13}  state  (times in s after not_before)")  # fmt: skip
        first = min(r.not_before for r in result["rows"]) if result["rows"] else 0

        def rel(row: RunRow, value: float | None) -> str:
            return _f(None if value is None else value - row.not_before)

        for r in result["rows"]:
            task = _f(r.launch_end - r.launch_start) if r.launch_end and r.launch_start else "-"
            print(f"{r.run_id:>5} {r.disk:<5} {r.not_before - first:>7.1f} {rel(r, r.queued_at):>8} "
                  f"{rel(r, r.launch_start):>8} {rel(r, r.started_at):>8} {rel(r, r.finished_at):>9} "
                  f"{task:>13}  {r.state}" + ("" if r.state == "succeeded" else f": {r.explanation[:80]}"))  # fmt: skip
        print()
    print(f"{'seconds':<46}{'n':>4}{'p50':>9}{'p95':>9}{'max':>9}")
    lines = [
        ("|started_at - not_before|", summary["started"]),
        ("|queued_at - not_before|", summary["queued"]),
        *((f"  {name}", stats) for name, stats in summary["phases"].items()),
        ("tick period (worker start to start)", summary["ticks"]["period"]),
        ("tick duration (jobs.tick task)", summary["ticks"]["duration"]),
        ("beat send -> worker starts the tick", summary["ticks"]["beat_send_to_worker_start"]),
    ]
    for label, s in lines:
        print(f"{label:<46}{s['n']:>4}{_f(s['p50']):>9}{_f(s['p95']):>9}{_f(s['max']):>9}")
    print("\nidle yardsticks (before the fire, nothing else of this benchmark running), seconds:")
    for name, value in result["yardsticks"].items():
        print(f"  {name:<50}{value:>8.3f}")
    cpu = result["cpu"]
    available = cpu["wall_s"] * (c["cpus"] or 1)
    busy = cpu["machine_busy_s"]
    print(f"CPU while the schedule ran: {cpu['wall_s']:.1f} s wall x {c['cpus']} CPUs = {available:.1f} CPU-s; "
          f"machine busy {busy:.1f} CPU-s ({100 * busy / available:.0f} %), of which:")  # fmt: skip
    owners = sorted(cpu["by_owner_s"].items(), key=lambda item: -item[1])
    owners.append(("unattributed (short-lived, kernel threads)", busy - sum(cpu["by_owner_s"].values())))
    for name, seconds in owners:
        print(f"  {name:<50}{seconds:>8.1f} CPU-s")
    if c["db"] == "postgres":
        print("  (the PostgreSQL server this benchmark uses counts among the other processes)")
    print("  machine time by kind: " + ", ".join(f"{k} {v:.1f}" for k, v in cpu["machine_s"].items()) + " CPU-s")
    n_runs = max(len(result["rows"]), 1)
    counts = ", ".join(f"{v} {k} ({v / n_runs:.1f}/run)" for k, v in result["sshd"].items())
    print(f"sshd log during the schedule: {counts}")
    states = ", ".join(f"{k} {v}" for k, v in summary["states"].items())
    print(f"\nruns: {len(result['rows'])}/{c['targets']} made; {summary['succeeded']} succeeded ({states}); "
          f"{summary['launch_tasks']} launch and {summary['poll_tasks']} poll tasks; "
          f"{summary['ticks']['count']} ticks in the window")  # fmt: skip
    v = summary["verdict"]
    s = summary["started"]
    if not v["complete"]:
        print(f"INCOMPLETE: not every run was made, started and final in time (all final: {c['all_final']})")
    for name, limit, ok in (("p95", TARGET_P95_S, v["p95"]), ("max", TARGET_MAX_S, v["max"])):
        print(f"{name} |started_at - not_before| {_f(s[name])} s (target <= {limit:g} s)  {'PASS' if ok else 'FAIL'}")
    print(f"overall: {'PASS' if v['all'] else 'FAIL'}")
    if result["worker_log_tail"]:
        print("\nthe end of the worker log:\n" + result["worker_log_tail"])


def to_json(result: dict[str, Any], summary: dict[str, Any]) -> str:
    from dataclasses import asdict

    rows = [asdict(r) | {"start_error": r.start_error, "queue_error": r.queue_error} for r in result["rows"]]
    extra = {key: result[key] for key in ("yardsticks", "sshd", "cpu")}
    return json.dumps({"config": result["config"], "summary": summary, "runs": rows} | extra, indent=2)


# ----------------------------------------------------------------------------------------- entry point


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--worker-shim"]:
        worker_shim(argv[1:])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_database_options(parser, DEFAULT_PG_URL, choices=benchkit.DATABASES)
    parser.add_argument("--concurrency", type=int, default=16, help="worker threads (default 16)")
    parser.add_argument("--targets", type=int, default=50, help="directory disks in the schedule (default 50)")
    parser.add_argument("--stagger", type=int, default=1, help="seconds between targets (default 1)")
    parser.add_argument("--lead", type=float, default=10.0, help="seconds from set-up to the first fire (default 10)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for all runs (default 300)")
    parser.add_argument("--rate-iops", type=int, default=0,
                        help="add fio rate_iops=N to the profile: fio uses little CPU (default 0: off)")  # fmt: skip
    parser.add_argument("--tick-seconds", type=float, default=1.0,
                        help="BENCHWEB_TICK_SECONDS for beat (default 1; the product's default is 5)")  # fmt: skip
    parser.add_argument("--per-run", action="store_true", help="print one line per run")
    parser.add_argument("--plain-worker", action="store_true", help="start `celery -A benchweb worker` untraced")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    add_smoke_option(parser, targets=2, concurrency=2, lead=3.0, timeout=120.0)
    args = parse_args(parser, argv)
    if (
        args.targets < 1
        or args.concurrency < 1
        or args.stagger < 0
        or args.lead < 3
        or args.timeout <= 0
        or args.rate_iops < 0
        or args.tick_seconds <= 0
    ):
        parser.error("need --targets, --concurrency >= 1, --stagger, --rate-iops >= 0, --lead >= 3, --timeout and "
                     "--tick-seconds > 0")  # fmt: skip

    interrupt_on_signals()
    stack = Stack("benchweb-precision-", args.tick_seconds)

    def work() -> tuple[dict[str, Any], dict[str, Any]]:
        result = measure(args, stack)
        return result, summarise(result)

    status, done = run_guarded("start_precision", stack, work)
    if done is None:
        return status
    result, summary = done
    if args.json:
        print(to_json(result, summary))
    else:
        print_report(result, summary, args.per_run)
    return verdict_status(args, summary["verdict"]["all"])


if __name__ == "__main__":
    sys.exit(main())
