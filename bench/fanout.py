"""Fan-out: one worker supervising 500 concurrent runs on several hosts, their starts spread by schedule stagger.

    .venv/bin/python bench/fanout.py [--targets 500] [--hosts 5] [--spread 60] [--runtime 120] [--rate-iops 5]
        [--file-mib 1] [--concurrency 8 | --concurrency 4,8,16] [--db sqlite|postgres] [--tick-seconds 1]
        [--lead 40] [--timeout S] [--per-run] [--plain-worker] [--json]

The stack is bench/start_precision.py's, set up by its functions: a fresh temporary directory, a migrated
database, an embedded redis-server, ONE `celery worker --pool threads --concurrency N` and ONE `celery beat`;
and --hosts private sshd servers on 127.0.0.1, each on a free port with its own host key, config and log,
each registered as a Host of its own with that key pinned, with the --targets directory disks spread evenly
over them (500 on 5 hosts: 100 each). Each run is 4k randread psync QD1, --runtime s time_based, a
--file-mib MiB file, direct=0, fio rate_iops=--rate-iops so that hundreds of fio processes leave the CPUs to
the worker. A warm-up run (2 s) on the first host goes first so that the worker has imported everything.

The starts are spread evenly over --spread seconds by the schedules' stagger. Schedule.stagger_s is whole
seconds, so starts closer together than that take several interval schedules, each holding some disks of one
host, their first fires a fraction of a second apart (plan_fires says how); --spread 0 fires everything at
once. With --runtime longer than --spread every run overlaps every other: the report checks that the most
runs running at once (fio start to fio end on the hosts) reaches --targets.

While the schedules run, the worker's resident memory (its process and all its children, summed) is sampled
every 0.5 s, and CPU time is attributed by owner (start_precision.CpuMeter) next to the machine's total. Before
the fire, fio alone measures what one fio process costs with and without its --status-interval=1 JSON output.
Only public entry points are read for the verdict (the schedules, and the Run fields state, not_before,
started_at, finished_at, progress, raw_output), so the script measures any worker design. The targets:

    start lateness    started_at - not_before (started_at: fio's start as the host reports it), every run <= 1 s
    result stored     finished_at - fio end, fio end = started_at + progress["elapsed_s"] when
                      progress["elapsed_from"] == "host" (the host's own clock): p50 <= 1.5 s, max <= 3 s
    worker RSS        peak <= 300 MB (process tree)
    SSH logins        <= 1 per host (one worker), from each sshd's log during the schedules
    runs              all succeeded and collected; all --targets ran at once

With several --concurrency values the script runs itself once per value, each with a fresh stack, and ends
with one comparison line per value. Exit status: 0 targets met (for every value), 1 missed, 2 the
measurement failed, 130 interrupted. Everything started here is stopped and removed, also on Ctrl-C.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import start_precision as sp
from benchkit import (
    DATABASES,
    PG_SERVER,
    BenchError,
    add_database_options,
    add_smoke_option,
    code_version,
    configure_django,
    fmt,
    interrupt_on_signals,
    loopback_hosts,
    parse_args,
    run_child,
    run_guarded,
    say,
    server_version,
    spawn,
    sshd_counts,
    start_redis,
    start_sshd,
    stop_group,
    verdict_status,
    without_options,
)

DEFAULT_PG_URL = f"{PG_SERVER}/benchweb_fanout"
TARGET_LATE_S = 1.0
TARGET_STORED_P50_S = 1.5
TARGET_STORED_MAX_S = 3.0
TARGET_RSS_MB = 300.0
TARGET_LOGINS_PER_HOST = 1
# The spread the schedules make may differ from --spread by this fraction (stagger is whole seconds).
SPREAD_TOLERANCE = 0.05
SAMPLE_S = 0.5
# Sampling /proc for thousands of processes costs this script CPU; past this many runs, sample less often.
CPU_SAMPLE_S = {100: 0.5, 10**9: 2.0}
FIO_PROCESSES = 4
FIO_SETTLE_S = 2
FIO_MEASURE_S = 6
MB = 2**20


# ----------------------------------------------------------------------------------------- the plan


@dataclass(frozen=True)
class Fire:
    """One interval schedule of the plan: disks of one host (indexes into its disks, in start order), first
    firing offset_s after the first fire, stagger_s apart."""

    host: int
    disks: tuple[int, ...]
    offset_s: float
    stagger_s: int


def per_host(targets: int, hosts: int) -> list[int]:
    """Disks per host, as even as can be (the first hosts take the remainder)."""
    return [targets // hosts + (h < targets % hosts) for h in range(hosts)]


def plan_fires(targets: int, hosts: int, spread_s: float) -> list[Fire]:
    """Schedules that start `targets` runs evenly over spread_s seconds.

    1. Start k of the whole fan-out goes to host k mod hosts, so every host sees an even stream of starts,
       one every G = hosts * spread_s / (targets - 1) seconds.
    2. A schedule's stagger is whole seconds, so one host's stream is split over m schedules of stagger
       s = round(m * G), first firing G apart: the smallest m for which s / m is within SPREAD_TOLERANCE of G.
       Each schedule holds one host's disks, because a fire orders its targets by host, then label.
    3. When no m fits, every disk gets a schedule of its own, at its exact moment.
    """
    counts = per_host(targets, hosts)
    if spread_s <= 0 or targets == 1:
        return [Fire(h, tuple(range(n)), 0.0, 0) for h, n in enumerate(counts) if n]
    every = hosts * spread_s / (targets - 1)
    most = max(counts)
    m, stagger = most, 0
    for tried in range(1, most):
        s = round(tried * every)
        if s >= 1 and abs(s / tried - every) <= SPREAD_TOLERANCE * every:
            m, stagger = tried, s
            break
    step = stagger / m if stagger else every  # the seconds between one host's starts, as planned
    return [
        Fire(h, tuple(range(r, n, m)), h * step / hosts + r * step, stagger)
        for h, n in enumerate(counts)
        for r in range(min(m, n))
    ]


def planned_starts(fires: list[Fire]) -> list[float]:
    """Every run's planned start after the first fire, in order."""
    return sorted(f.offset_s + i * f.stagger_s for f in fires for i in range(len(f.disks)))


# ----------------------------------------------------------------------------------------- meters


class RssMeter:
    """The resident memory of a process and all its descendants, summed, every SAMPLE_S seconds."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.samples: list[tuple[float, int, int]] = []  # (monotonic time, bytes, threads of the worker)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _loop(self) -> None:
        while True:
            with contextlib.suppress(Exception):  # a child that ends mid-sample is simply not counted
                self.samples.append((time.monotonic(), *tree_rss(self.pid)))
            if self._stop.wait(SAMPLE_S):
                return


class RoundTripProbe:
    """An SFTP stat of the first host's run directory every SAMPLE_S seconds, over a connection of this script
    opened before the schedules (so its login is not counted): how long one exchange with a host takes while
    the runs go. A look, a collection and a clean-up are made of such exchanges."""

    def __init__(self, host: Any) -> None:
        from jobs import ssh

        self.conn = ssh.connect(host.ssh_target())
        self.path = host.run_base_dir
        self.idle = self._times(20)
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _times(self, n: int) -> list[float]:
        times = []
        for _ in range(n):
            begun = time.perf_counter()
            self.conn.size_of(self.path)
            times.append(time.perf_counter() - begun)
        return times

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        self.conn.close()

    def _loop(self) -> None:
        while not self._stop.wait(SAMPLE_S):
            with contextlib.suppress(Exception):
                self.samples += self._times(1)


def tree_rss(pid: int) -> tuple[int, int]:
    """(RSS of pid and its descendants in bytes, threads of pid)."""
    import psutil

    root = psutil.Process(pid)
    total = root.memory_info().rss
    for child in root.children(recursive=True):
        with contextlib.suppress(psutil.Error):
            total += child.memory_info().rss
    return total, root.num_threads()


def fio_cost(stack: sp.Stack, rate_iops: int, file_mib: int) -> dict[str, float]:
    """CPU seconds per second of one fio (its main process and the job process it forks) running the runs'
    workload, with and without --status-interval=1 (a whole JSON report every second): FIO_PROCESSES of each at
    once, measured in their steady state (from FIO_SETTLE_S after the start, past start-up and file layout, for
    FIO_MEASURE_S). The runs' own fio also has its wrapper around it, which sleeps while fio runs."""
    import psutil

    work = stack.tmp / "fio-yardstick"
    job = ["--ioengine=psync", "--rw=randread", "--bs=4096", "--iodepth=1", "--direct=0", f"--size={file_mib * MB}",
           f"--runtime={FIO_SETTLE_S + FIO_MEASURE_S + 1}", "--time_based=1", "--unlink=1",
           "--output-format=json"]  # fmt: skip
    if rate_iops:
        job.append(f"--rate_iops={rate_iops}")
    cases = {"with --status-interval=1": ["--status-interval=1"], "without": []}
    started: dict[str, list[subprocess.Popen[bytes]]] = {}
    try:
        for name, extra in cases.items():
            started[name] = []
            for i in range(FIO_PROCESSES):
                directory = work / f"{name.split()[0]}-{i}"
                directory.mkdir(parents=True)
                argv = ["fio", "--name=yardstick", f"--directory={directory}", *job, *extra,
                        f"--output={directory}/out"]  # fmt: skip
                started[name].append(spawn(argv, None))
        time.sleep(FIO_SETTLE_S)
        before = {name: sum(sp.tree_cpu_s(psutil.Process(p.pid)) for p in procs) for name, procs in started.items()}
        time.sleep(FIO_MEASURE_S)
        after = {name: sum(sp.tree_cpu_s(psutil.Process(p.pid)) for p in procs) for name, procs in started.items()}
        for name, procs in started.items():
            for process in procs:
                if process.wait(timeout=30):
                    raise BenchError(f"fio for the yardstick ({name}) exited with status {process.returncode}")
    finally:
        for procs in started.values():
            for process in procs:
                stop_group(process, grace=5)
    return {f"fio CPU-s per s, {name}": (after[name] - before[name]) / FIO_MEASURE_S / FIO_PROCESSES for name in cases}


# ----------------------------------------------------------------------------------------- measuring


def make_disks(stack: sp.Stack, hosts: list[Any], counts: list[int]) -> list[list[Any]]:
    """counts[h] directory disks on host h, labelled d000, d001, ... in start order (a fire orders by label)."""
    from jobs.models import Disk

    width = max(3, len(str(max(counts) - 1)))
    disks = []
    for h, (host, n) in enumerate(zip(hosts, counts, strict=True)):
        mine = []
        for i in range(n):
            label = f"d{i:0{width}d}"
            target = stack.targets / f"h{h + 1}" / label
            target.mkdir(parents=True)
            mine.append(Disk.objects.create(host=host, label=label, target_path=str(target), disk_type="custom"))
        disks.append(mine)
    return disks


def make_schedules(team: Any, disks: list[list[Any]], profile: Any, fires: list[Fire], lead_s: float) -> list[Any]:
    from django.utils import timezone

    first = (timezone.now() + timedelta(seconds=lead_s)).replace(microsecond=0)
    return [
        sp.make_schedule(team, [disks[f.host][i] for i in f.disks], profile, lead_s=lead_s, stagger_s=f.stagger_s,
                         fire_at=first + timedelta(seconds=f.offset_s), name=f"fanout {n:03d} host {f.host + 1}")
        for n, f in enumerate(fires, 1)
    ]  # fmt: skip


def measure(args: argparse.Namespace, stack: sp.Stack) -> dict[str, Any]:
    configure_django(stack, args.db, args.database_url)
    from django.db.models.functions import Length

    from jobs.models import Run

    say(f"starting redis, {args.hosts} sshd and the worker ...")
    start_redis(stack)
    private_key = start_sshd(stack, args.hosts)
    hosts = loopback_hosts(stack, private_key, "fanout bench")
    team = hosts[0].team
    fires = plan_fires(args.targets, args.hosts, args.spread)
    disks = make_disks(stack, hosts, per_host(args.targets, args.hosts))
    profile = sp.make_profile(team, args.runtime, args.rate_iops, args.file_mib)
    sp.start_worker(stack, args.concurrency, args.plain_worker)
    say("idle yardsticks: SSH logins and commands, one 2 s warm-up run, fio alone ...")
    yardsticks = sp.idle_yardsticks(stack, hosts[0], sp.make_profile(team, 2, args.rate_iops, args.file_mib))
    yardsticks |= fio_cost(stack, args.rate_iops, args.file_mib)
    rss_idle, _ = tree_rss(stack.worker.pid)
    probe = RoundTripProbe(hosts[0])
    sshd_offsets = [sshd.log_path.stat().st_size for sshd in stack.sshds]
    cpu = sp.CpuMeter(stack, nice_fio=args.nice_fio)
    cpu.INTERVAL_S = next(every for most, every in sorted(CPU_SAMPLE_S.items()) if args.targets <= most)
    rss = RssMeter(stack.worker.pid)
    sp.start_beat(stack)
    schedules = make_schedules(team, disks, profile, fires, args.lead)
    cpu.start()
    rss.start()
    probe.start()
    fire_at = min(s.next_fire_at for s in schedules)
    timeout = args.timeout or args.lead + args.spread + args.runtime + 180
    say(f"{len(schedules)} schedules fire {args.targets} runs on {args.hosts} hosts from {fire_at:%H:%M:%S} UTC "
        f"({fire_at.timestamp() - time.time():.1f} s from now) over {args.spread:g} s; waiting up to {timeout:g} s "
        "for all of them to be final")  # fmt: skip
    load_before = os.getloadavg()
    try:
        done = sp.wait_for_runs(schedules, args.targets, time.monotonic() + timeout)
    finally:
        rss.stop()
        cpu.stop()
        probe.stop()
    load_after = os.getloadavg()
    if not rss.samples:
        raise BenchError("no resident-memory sample of the worker could be taken")
    time.sleep(1.5)  # the last tasks' end lines
    trace = sp.read_trace(stack)
    runs = sp.runs_of(schedules)
    sizes = list(runs.annotate(n=Length("raw_output")).values_list("n", flat=True))
    config = {
        "db": args.db, "targets": args.targets, "hosts": args.hosts, "spread_s": args.spread,
        "schedules": len(schedules), "staggers_s": sorted({f.stagger_s for f in fires}),
        "concurrency": args.concurrency, "runtime_s": args.runtime, "rate_iops": args.rate_iops,
        "file_mib": args.file_mib, "tick_s": args.tick_seconds, "lead_s": args.lead, "timeout_s": timeout,
        "fire_at": fire_at.isoformat(), "cpus": os.cpu_count(), "load_before": load_before, "load_after": load_after,
        "all_final": done, "traced_worker": not args.plain_worker, "database": server_version(),
        "code": code_version(), "cpu_sample_s": cpu.INTERVAL_S, "nice_fio": args.nice_fio,
    }  # fmt: skip
    return {
        "config": config,
        "rows": sp.collect(schedules, trace),
        "trace": trace,
        # Collected: the results were read back from the host and stored.
        "collected": runs.filter(state__in=(Run.State.SUCCEEDED, Run.State.FAILED)).exclude(raw_output="").count(),
        "raw_output_bytes": [n or 0 for n in sizes],
        "rss": {"idle_bytes": rss_idle, "samples": rss.samples},
        "sftp_round_trip_s": {"idle": probe.idle, "during": probe.samples},
        "yardsticks": yardsticks,
        "sshd": {
            host.name: sshd_counts(stack, offset, sshd)
            for host, sshd, offset in zip(hosts, stack.sshds, sshd_offsets, strict=True)
        },
        "cpu": {
            "wall_s": cpu.wall_s,
            "machine_busy_s": cpu.busy_s,
            "by_owner_s": cpu.seconds,
            "machine_s": cpu.machine,
            "reniced": cpu.reniced,
        },
        "worker_log_tail": "" if done else stack.worker_log.read_text(errors="replace")[-4000:],
        "task_seconds": task_seconds(stack),
    }


def task_seconds(stack: sp.Stack) -> dict[str, list[float]]:
    """How long each task the worker ran took, by task name (from the trace's start and end lines): where the
    worker's threads went."""
    started: dict[str, tuple[str, float]] = {}
    spent: dict[str, list[float]] = {}
    lines = stack.trace.read_text().splitlines() if stack.trace.exists() else []
    for line in lines:
        with contextlib.suppress(ValueError):
            kind, at, name, task_id, _args, _extra = json.loads(line)
            if kind == "start":
                started[task_id] = (name, at)
            elif task_id in started:
                name, began = started.pop(task_id)
                spent.setdefault(name.removeprefix("jobs."), []).append(at - began)
    return spent


# ----------------------------------------------------------------------------------------- the figures


def most_at_once(intervals: list[tuple[float, float]]) -> int:
    """The largest number of intervals that hold one moment (an end and a start at one moment do not overlap)."""
    events = sorted([(start, 1) for start, _ in intervals] + [(end, -1) for _, end in intervals])
    running = peak = 0
    for _, step in events:
        running += step
        peak = max(peak, running)
    return peak


def summarise(result: dict[str, Any]) -> dict[str, Any]:
    rows: list[sp.RunRow] = result["rows"]
    c = result["config"]
    n = c["targets"]
    base = sp.summarise(result)
    late = sp.percentiles([r.started_at - r.not_before for r in rows if r.started_at is not None])
    stored = sp.percentiles([r.finished_at - r.tool_end for r in rows if r.finished_at and r.tool_end])
    running = sp.percentiles([r.launch_end - r.not_before for r in rows if r.launch_end is not None])
    on_host = [(r.started_at, r.tool_end) for r in rows if r.started_at is not None and r.tool_end is not None]
    run_seconds = sum(end - start for start, end in on_host)
    slots = sorted(r.not_before for r in rows)
    rss_mb = [b / MB for _, b, _ in result["rss"]["samples"]]
    threads = [t for _, _, t in result["rss"]["samples"]]
    rss = {
        "idle_mb": result["rss"]["idle_bytes"] / MB,
        "peak_mb": max(rss_mb),
        "median_mb": statistics.median(rss_mb),
        "samples": len(rss_mb),
        "threads_max": max(threads),
    }
    logins = {host: counts["logins"] for host, counts in result["sshd"].items()}
    sizes = sorted(result["raw_output_bytes"]) or [0]
    at_once = most_at_once(on_host)
    all_made = len(rows) == n and c["all_final"]
    verdict = {
        "runs": all_made and base["succeeded"] == n and result["collected"] == n,
        "at_once": at_once >= n,
        "late": all_made and late["n"] == n and late["max"] <= TARGET_LATE_S,
        "stored_p50": stored["n"] == n and stored["p50"] <= TARGET_STORED_P50_S,
        "stored_max": stored["n"] == n and stored["max"] <= TARGET_STORED_MAX_S,
        "rss": rss["peak_mb"] <= TARGET_RSS_MB,
        "logins": max(logins.values(), default=0) <= TARGET_LOGINS_PER_HOST,
    }
    verdict["all"] = all(verdict.values())
    return {
        "made": len(rows),
        "succeeded": base["succeeded"],
        "collected": result["collected"],
        "states": base["states"],
        "spread_made_s": slots[-1] - slots[0] if slots else None,
        "start_lateness": late,
        "early_starts": sum(r.started_at < r.not_before for r in rows if r.started_at is not None),
        "running_delay": running,
        "phases": base["phases"],
        "stored_after_end": stored,
        "at_once": at_once,
        "run_seconds": run_seconds,
        "rss": rss,
        "logins": logins,
        "raw_output": {
            "p50_kb": statistics.median(sizes) / 1024,
            "max_kb": sizes[-1] / 1024,
            "total_mb": sum(sizes) / MB,
        },
        "launch_tasks": base["launch_tasks"],
        "poll_tasks": base["poll_tasks"],
        "verdict": verdict,
    }


# ----------------------------------------------------------------------------------------- output


_f = functools.partial(fmt, digits=2)


def _load(values: tuple[float, float, float]) -> str:
    return "/".join(f"{v:.2f}" for v in values)


def _rel(row: sp.RunRow, moment: float | None) -> str:
    return _f(None if moment is None else moment - row.not_before)


def print_report(result: dict[str, Any], s: dict[str, Any], per_run: bool) -> None:
    c = result["config"]
    print(f"{c['targets']} directory targets on {c['hosts']} loopback sshd hosts, {c['schedules']} interval "
          f"schedules (stagger {', '.join(map(str, c['staggers_s']))} s), starts spread over {c['spread_s']:g} s "
          f"({_f(s['spread_made_s'])} s as made) from {c['fire_at']}")  # fmt: skip
    print(f"fio 4k randread psync QD1 {c['runtime_s']} s time_based {c['file_mib']} MiB direct=0 "
          f"rate_iops={c['rate_iops'] or 'off'} --status-interval=1")  # fmt: skip
    print(f"worker: --pool threads --concurrency {c['concurrency']}{' (traced)' if c['traced_worker'] else ''}; "
          f"one beat, tick every {c['tick_s']:g} s; database {c['database']}; redis embedded")  # fmt: skip
    print(f"code: {c['code']}")
    if c.get("nice_fio"):
        print(f"the runs' fio reniced to {c['nice_fio']} within one CPU sample ({c['cpu_sample_s']:g} s) of its start "
              f"({result['cpu']['reniced']} processes): the loopback hosts' benchmarks yield the CPU to the worker "
              "and the hosts' sshd, as on machines of their own")  # fmt: skip
    print(f"machine: {c['cpus']} CPUs, load average (1/5/15 min) {_load(c['load_before'])} before the fire, "
          f"{_load(c['load_after'])} at the end\n")  # fmt: skip
    if per_run:
        print(f"{'run':>6} {'host':<11} {'disk':<5} {'queued':>7} {'launch':>7} {'running':>7} {'started':>7} "
              f"{'fio end':>7} {'final':>7}  state  (s after not_before)")  # fmt: skip
        for r in result["rows"]:
            times = (r.queued_at, r.launch_start, r.launch_end, r.started_at, r.tool_end, r.finished_at)
            print(f"{r.run_id:>6} {r.host:<11} {r.disk:<5} " + " ".join(f"{_rel(r, t):>7}" for t in times)
                  + f"  {r.state}" + ("" if r.state == "succeeded" else f": {r.explanation[:80]}"))  # fmt: skip
        print()
    print(f"{'seconds':<52}{'n':>5}{'p50':>8}{'p95':>8}{'max':>8}")
    lines = [
        ("start lateness: started_at - not_before", s["start_lateness"]),
        ("  running state: launch task end - not_before", s["running_delay"]),
        *((f"  {name}", stats) for name, stats in s["phases"].items() if "finished_at" not in name),
        ("result stored: finished_at - fio end (host clock)", s["stored_after_end"]),
    ]
    for label, p in lines:
        print(f"{label:<52}{p['n']:>5}{_f(p['p50']):>8}{_f(p['p95']):>8}{_f(p['max']):>8}")
    if s["early_starts"]:
        print(f"  ({s['early_starts']} runs started before not_before: clock resolution of the wrapper's wait)")
    rss = s["rss"]
    print(f"\nworker RSS (process tree, every {SAMPLE_S:g} s, {rss['samples']} samples): idle {rss['idle_mb']:.0f} MB "
          f"after the warm-up; during the schedules median {rss['median_mb']:.0f} MB, peak {rss['peak_mb']:.0f} MB; "
          f"up to {rss['threads_max']} threads")  # fmt: skip
    print(f"runs on the hosts at once (fio start .. fio end): up to {s['at_once']} of {c['targets']}")
    out = s["raw_output"]
    print(f"fio output stored per run (raw_output, the whole --status-interval stream): p50 {out['p50_kb']:.0f} KiB, "
          f"max {out['max_kb']:.0f} KiB, {out['total_mb']:.1f} MiB in all")  # fmt: skip
    cpu = result["cpu"]
    available = cpu["wall_s"] * (c["cpus"] or 1)
    busy = cpu["machine_busy_s"]
    print(
        f"CPU while the schedules ran: {cpu['wall_s']:.1f} s wall x {c['cpus']} CPUs; machine busy {busy:.1f} "
        f"CPU-s ({100 * busy / available:.0f} % of all CPUs), of which (sampled every {c['cpu_sample_s']:g} s):"
    )
    for name, seconds in sorted(cpu["by_owner_s"].items(), key=lambda item: -item[1]):
        share = f" ({100 * seconds / cpu['wall_s']:.0f} % of one CPU)" if name == "worker" else ""
        if name.startswith("benchmark runs") and s["run_seconds"]:
            share = f" ({100 * seconds / s['run_seconds']:.2f} % of one CPU per running fio)"
        print(f"  {name:<50}{seconds:>8.1f} CPU-s{share}")
    print("  machine time by kind: " + ", ".join(f"{k} {v:.1f}" for k, v in cpu["machine_s"].items()) + " CPU-s")
    ys = result["yardsticks"]
    print("idle yardsticks: " + "; ".join(f"{k} {v:.3f} s" for k, v in ys.items() if not k.startswith("fio CPU")))
    fio = {k: v for k, v in ys.items() if k.startswith("fio CPU")}
    if fio:
        shares = [f"{k.removeprefix('fio CPU-s per s, ')} {100 * v:.2f} % of one CPU (x {c['targets']} runs = "
                  f"{v * c['targets']:.2f} CPUs)" for k, v in fio.items()]  # fmt: skip
        print(f"fio alone, same workload, {FIO_PROCESSES} at once, steady state: " + "; ".join(shares))
    trips = result.get("sftp_round_trip_s") or {}
    if trips.get("during"):
        ms = {name: sp.percentiles([1000 * t for t in values]) for name, values in trips.items() if values}
        print("one SFTP exchange with a host (a stat, ms, p50/p95/max): "
              + "; ".join(f"{name} {v['p50']:.1f} / {v['p95']:.1f} / {v['max']:.1f} (n={v['n']})"
                          for name, v in ms.items()))  # fmt: skip
    spent = result.get("task_seconds") or {}
    if spent:
        busy = {name: sum(values) for name, values in spent.items()}
        print(f"worker threads' time by task ({sum(busy.values()):.0f} thread-s in all; n, p50 / p95 / max s):")
        for name in sorted(busy, key=lambda name: -busy[name]):
            p = sp.percentiles(spent[name])
            print(f"  {name:<22}{busy[name]:>8.1f} thread-s  n {p['n']:>5}  {_f(p['p50'])} / {_f(p['p95'])} / "
                  f"{_f(p['max'])}")  # fmt: skip
    n = max(s["made"], 1)
    print("sshd during the schedules, per host:")
    total: dict[str, int] = {}
    for host, counts in result["sshd"].items():
        print(f"  {host:<12}" + ", ".join(f"{v} {k}" for k, v in counts.items()))
        for k, v in counts.items():
            total[k] = total.get(k, 0) + v
    print(f"  {'all hosts':<12}" + ", ".join(f"{v} {k} ({v / n:.2f}/run)" for k, v in total.items()))
    states = ", ".join(f"{k} {v}" for k, v in s["states"].items())
    print(f"\nruns: {s['made']}/{c['targets']} made, {s['succeeded']} succeeded ({states}), {s['collected']} "
          f"collected; {s['launch_tasks']} launch and {s['poll_tasks']} poll tasks")  # fmt: skip
    others = [r for r in result["rows"] if r.state != "succeeded"]
    for r in others[:10]:
        print(f"  run {r.run_id} ({r.disk}) {r.state}: {r.explanation}")
    if len(others) > 10:
        print(f"  ... and {len(others) - 10} more not succeeded")
    v, late, stored = s["verdict"], s["start_lateness"], s["stored_after_end"]
    checks = [
        (f"all {c['targets']} runs succeeded and collected", f"{s['succeeded']} ok, {s['collected']} coll",
         v["runs"]),
        (f"all {c['targets']} runs at once on the hosts", f"{s['at_once']}", v["at_once"]),
        (f"start lateness, every run <= {TARGET_LATE_S:g} s", f"max {_f(late['max'])} s", v["late"]),
        (f"fio end -> result stored p50 <= {TARGET_STORED_P50_S:g} s", f"{_f(stored['p50'])} s", v["stored_p50"]),
        (f"fio end -> result stored max <= {TARGET_STORED_MAX_S:g} s", f"{_f(stored['max'])} s", v["stored_max"]),
        (f"worker RSS peak <= {TARGET_RSS_MB:g} MB", f"{rss['peak_mb']:.0f} MB", v["rss"]),
        (f"SSH logins <= {TARGET_LOGINS_PER_HOST} per host", f"max {max(s['logins'].values(), default=0)}",
         v["logins"]),
    ]  # fmt: skip
    print(f"\n{'target':<48}{'measured':>20}  verdict")
    for label, measured, ok in checks:
        print(f"{label:<48}{measured:>20}  {'met' if ok else 'MISSED'}")
    print(f"overall: {'all targets met' if v['all'] else 'targets missed'}")
    if result["worker_log_tail"]:
        print("\nthe end of the worker log:\n" + result["worker_log_tail"])


def to_json(result: dict[str, Any], summary: dict[str, Any]) -> str:
    from dataclasses import asdict

    extra = {key: result[key] for key in ("yardsticks", "sshd", "cpu", "task_seconds")}
    rss = [{"t": t, "mb": b / MB, "threads": n} for t, b, n in result["rss"]["samples"]]
    runs = [asdict(r) for r in result["rows"]]
    return json.dumps({"config": result["config"], "summary": summary, "rss": rss, "runs": runs} | extra, indent=2)


# ----------------------------------------------------------------------------------------- several values


def sweep(argv: list[str], values: list[int]) -> int:
    """Run this script once per concurrency value, each in its own process with a fresh stack (Django
    settings and the database belong to one process), and compare."""
    rest = without_options(argv, ("--concurrency",), ("--json",))
    lines, status = [], 0
    for value in values:
        say(f"=== --concurrency {value} ===")
        code, stdout = run_child([sys.executable, __file__, *rest, "--concurrency", str(value), "--json"])
        if code == 130:
            return 130
        if code not in (0, 1):
            lines.append(f"{value:>11}  the measurement failed (exit {code})")
            status = 2
            continue
        status = max(status, code)
        out = json.loads(stdout)
        s, c = out["summary"], out["config"]
        late, stored, rss = s["start_lateness"], s["stored_after_end"], s["rss"]
        worker_cpu = out["cpu"]["by_owner_s"].get("worker", 0.0)
        logins = max(s["logins"].values(), default=0)
        lines.append(f"{value:>11}  {s['made']:>4}/{s['succeeded']:>4}/{s['collected']:>4} {s['at_once']:>5}  "
                     f"{_f(late['p50']):>6} {_f(late['p95']):>6} {_f(late['max']):>6}  {_f(stored['p50']):>6} "
                     f"{_f(stored['max']):>6}  {rss['peak_mb']:>5.0f} {rss['median_mb']:>5.0f}  {logins:>6}  "
                     f"{worker_cpu:>6.1f}  {c['load_before'][0]:>5.2f}  "
                     f"{'met' if s['verdict']['all'] else 'MISSED'}")  # fmt: skip
    print("concurrency  made/  ok/coll  at    start lateness s       stored s       RSS MB    logins  worker  load")
    print("                            once  p50    p95    max     p50    max     peak   med   /host   CPU-s  1min")
    print("\n".join(lines))
    return status


# ----------------------------------------------------------------------------------------- entry point


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--concurrency", default="8",
                        help="worker threads, or several comma-separated values to compare (default 8)")  # fmt: skip
    parser.add_argument("--targets", type=int, default=500, help="directory disks, one run each (default 500)")
    parser.add_argument(
        "--hosts", type=int, default=5, help="loopback sshd hosts the disks are spread over (default 5)"
    )
    parser.add_argument(
        "--spread",
        type=float,
        default=60.0,
        help="seconds over which the runs' starts are spread by stagger (default 60; 0: all at once)",
    )
    parser.add_argument(
        "--runtime",
        type=int,
        default=120,
        help="fio runtime in seconds, longer than --spread so that all runs overlap (default 120)",
    )
    parser.add_argument(
        "--rate-iops",
        type=int,
        default=2,
        help="fio rate_iops per run, 0 for off (default 2: fio's CPU grows with its rate, ~0.5 %% of a CPU at 2)",
    )
    parser.add_argument("--file-mib", type=int, default=1, help="fio file size per run in MiB (default 1)")
    add_database_options(parser, DEFAULT_PG_URL, choices=DATABASES)
    parser.add_argument("--tick-seconds", type=float, default=1.0,
                        help="BENCHWEB_TICK_SECONDS for beat (default 1; the product's default is 5)")  # fmt: skip
    parser.add_argument("--lead", type=float, default=40.0,
                        help="seconds from set-up to the first fire (default 40: past the claim lead, so that the "
                             "runs are claimed and launched ahead of the fire as in production)")  # fmt: skip
    parser.add_argument(
        "--timeout",
        type=float,
        default=0.0,
        help="seconds to wait for all runs (default lead + spread + runtime + 180)",
    )
    parser.add_argument(
        "--nice-fio",
        type=int,
        default=0,
        choices=range(0, 20),
        metavar="0..19",
        help="give the runs' fio this niceness (default 0: off), so that the benchmarks on the loopback hosts do not "
        "take the worker's CPU, as on hosts that are machines of their own: 500 fio need more than 2 CPUs here",
    )
    parser.add_argument("--per-run", action="store_true", help="print one line per run")
    parser.add_argument("--plain-worker", action="store_true", help="start `celery -A benchweb worker` untraced")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    add_smoke_option(parser, targets=2, hosts=1, spread=0.0, runtime=2, lead=3.0, concurrency="2")
    args = parse_args(parser, argv)
    try:
        values = [int(v) for v in args.concurrency.split(",")]
    except ValueError:
        parser.error(f"--concurrency takes numbers separated by commas, got {args.concurrency!r}")
    if min(values) < 1 or args.targets < 1 or args.hosts < 1 or args.runtime < 1 or args.file_mib < 1:
        parser.error("need --concurrency, --targets, --hosts, --runtime and --file-mib >= 1")
    if args.hosts > args.targets:
        parser.error(f"--hosts {args.hosts} is more than --targets {args.targets}: every host needs a disk")
    if args.rate_iops < 0 or args.spread < 0 or args.lead < 3 or args.timeout < 0 or args.tick_seconds <= 0:
        parser.error("need --rate-iops, --spread, --timeout >= 0, --lead >= 3 and --tick-seconds > 0")
    if args.runtime <= args.spread:
        say(f"note: --runtime {args.runtime} is not longer than --spread {args.spread:g}: the runs cannot all "
            "overlap, and the at-once check will fail")  # fmt: skip
    interrupt_on_signals()
    if len(values) > 1:
        try:
            return sweep(argv, values)
        except KeyboardInterrupt:
            return 130
    args.concurrency = values[0]

    stack = sp.Stack("benchweb-fanout-", args.tick_seconds)

    def work() -> tuple[dict[str, Any], dict[str, Any]]:
        result = measure(args, stack)
        return result, summarise(result)

    status, done = run_guarded("fanout", stack, work)
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
