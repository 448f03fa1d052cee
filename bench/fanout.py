"""Fan-out: one worker supervising 50 concurrent runs that one schedule fires at the same moment.

    .venv/bin/python bench/fanout.py [--concurrency 8 | --concurrency 4,8,16] [--targets 50] [--runtime 35]
        [--rate-iops 50] [--db sqlite|postgres] [--tick-seconds 1] [--lead 40] [--timeout 300] [--per-run]
        [--plain-worker] [--json]

The stack is bench/start_precision.py's, set up by its functions: a fresh temporary directory, a migrated
database, an embedded redis-server, a private sshd on 127.0.0.1 with --targets directory disks, ONE
`celery worker --pool threads --concurrency N` and ONE `celery beat`. One interval schedule with stagger 0
fires all targets at once with a profile long enough that every run overlaps every other (4k randread psync
QD1, --runtime s time_based, 4 MiB file, fio rate_iops=--rate-iops so that 50 fio processes leave the CPUs
to the worker). A warm-up run (2 s) goes first so that the worker has imported and connected everything.

While the schedule runs, the worker's resident memory (its process and all its children, summed) is sampled
every 0.5 s, and CPU time is attributed by owner (start_precision.CpuMeter). The report gives runs made,
succeeded and collected; the launch delay started_at - not_before (started_at is the moment fio started on
the host, as the host reports it) and the moment each run went to *running* (the end of its launch task,
from the traced worker), p50/p95/max, with where the time went; peak and median RSS; CPU use.
Targets: all runs collected, every started_at within 5 s of not_before, peak RSS <= 200 MB.

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
import sys
import threading
import time
from typing import Any

import start_precision as sp
from benchkit import (
    DATABASES,
    PG_SERVER,
    BenchError,
    add_database_options,
    code_version,
    configure_django,
    fmt,
    interrupt_on_signals,
    run_child,
    run_guarded,
    say,
    server_version,
    sshd_counts,
    start_redis,
    start_sshd,
    without_options,
)

DEFAULT_PG_URL = f"{PG_SERVER}/benchweb_fanout"
TARGET_LAUNCH_S = 5.0
TARGET_RSS_MB = 200.0
SAMPLE_S = 0.5
MB = 2**20


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


def tree_rss(pid: int) -> tuple[int, int]:
    """(RSS of pid and its descendants in bytes, threads of pid)."""
    import psutil

    root = psutil.Process(pid)
    total = root.memory_info().rss
    for child in root.children(recursive=True):
        with contextlib.suppress(psutil.Error):
            total += child.memory_info().rss
    return total, root.num_threads()


def measure(args: argparse.Namespace, stack: sp.Stack) -> dict[str, Any]:
    configure_django(stack, args.db, args.database_url)
    from jobs.models import Run

    say("starting redis, sshd and the worker ...")
    start_redis(stack)
    private_key = start_sshd(stack)
    team, disks, profile = sp.make_objects(stack, private_key, args.targets, args.rate_iops, args.runtime)
    sp.start_worker(stack, args.concurrency, args.plain_worker)
    say("idle yardsticks: SSH logins and commands, one 2 s warm-up run ...")
    yardsticks = sp.idle_yardsticks(stack, disks[0].host, sp.make_profile(team, 2, args.rate_iops))
    rss_idle, _ = tree_rss(stack.worker.pid)
    sshd_offset = stack.sshd.log_path.stat().st_size
    cpu = sp.CpuMeter(stack)
    rss = RssMeter(stack.worker.pid)
    sp.start_beat(stack)
    schedule = sp.make_schedule(team, disks, profile, lead_s=args.lead, stagger_s=0)
    cpu.start()
    rss.start()
    fire_at = schedule.next_fire_at
    say(f"schedule fires {args.targets} runs at {fire_at:%H:%M:%S} UTC ({fire_at.timestamp() - time.time():.1f} s "
        f"from now); waiting up to {args.timeout:g} s for all of them to be final")  # fmt: skip
    load_before = os.getloadavg()
    try:
        done = sp.wait_for_runs(schedule, args.targets, time.monotonic() + args.timeout)
    finally:
        rss.stop()
        cpu.stop()
    load_after = os.getloadavg()
    if not rss.samples:
        raise BenchError("no resident-memory sample of the worker could be taken")
    time.sleep(1.5)  # the last tasks' end lines
    trace = sp.read_trace(stack)
    runs = Run.objects.filter(schedule=schedule)
    config = {
        "db": args.db, "targets": args.targets, "concurrency": args.concurrency, "runtime_s": args.runtime,
        "rate_iops": args.rate_iops, "tick_s": args.tick_seconds, "lead_s": args.lead, "fire_at": fire_at.isoformat(),
        "cpus": os.cpu_count(), "load_before": load_before, "load_after": load_after, "all_final": done,
        "traced_worker": not args.plain_worker, "database": server_version(), "code": code_version(),
    }  # fmt: skip
    return {
        "config": config,
        "rows": sp.collect(schedule, trace),
        "trace": trace,
        # Collected: the results were read back from the host and stored (the poll's _collect step).
        "collected": runs.filter(state__in=(Run.State.SUCCEEDED, Run.State.FAILED)).exclude(raw_output="").count(),
        "rss": {"idle_bytes": rss_idle, "samples": rss.samples},
        "yardsticks": yardsticks,
        "sshd": sshd_counts(stack, sshd_offset),
        "cpu": {
            "wall_s": cpu.wall_s,
            "machine_busy_s": cpu.busy_s,
            "by_owner_s": cpu.seconds,
            "machine_s": cpu.machine,
        },
        "worker_log_tail": "" if done else stack.worker_log.read_text(errors="replace")[-4000:],
    }


def most_at_once(intervals: list[tuple[float, float]]) -> int:
    """The largest number of intervals that hold one moment."""
    events = sorted([(start, 1) for start, _ in intervals] + [(end, -1) for _, end in intervals])
    running = peak = 0
    for _, step in events:
        running += step
        peak = max(peak, running)
    return peak


def summarise(result: dict[str, Any]) -> dict[str, Any]:
    rows: list[sp.RunRow] = result["rows"]
    c = result["config"]
    base = sp.summarise(result)
    launched = sp.percentiles([r.started_at - r.not_before for r in rows if r.started_at is not None])
    running = sp.percentiles([r.launch_end - r.not_before for r in rows if r.launch_end is not None])
    on_host = [(r.started_at, r.started_at + c["runtime_s"]) for r in rows if r.started_at is not None]
    collect_lag = sp.percentiles(
        [r.finished_at - r.started_at - c["runtime_s"] for r in rows if r.finished_at and r.started_at]
    )
    rss_mb = [b / MB for _, b, _ in result["rss"]["samples"]]
    threads = [n for _, _, n in result["rss"]["samples"]]
    rss = {
        "idle_mb": result["rss"]["idle_bytes"] / MB,
        "peak_mb": max(rss_mb),
        "median_mb": statistics.median(rss_mb),
        "samples": len(rss_mb),
        "threads_max": max(threads),
    }
    worst = max((abs(r.started_at - r.not_before) for r in rows if r.started_at is not None), default=None)
    all_made = len(rows) == c["targets"] and launched["n"] == c["targets"]
    verdict = {
        "collected": result["collected"] == c["targets"] and c["all_final"],
        "launch": all_made and worst is not None and worst <= TARGET_LAUNCH_S,
        "rss": rss["peak_mb"] <= TARGET_RSS_MB,
    }
    verdict["all"] = all(verdict.values())
    return {
        "made": len(rows),
        "succeeded": base["succeeded"],
        "collected": result["collected"],
        "states": base["states"],
        "launch_delay": launched,
        "running_delay": running,
        "phases": base["phases"],
        "collect_lag": collect_lag,
        "on_host_at_once": most_at_once(on_host),
        "rss": rss,
        "launch_tasks": base["launch_tasks"],
        "poll_tasks": base["poll_tasks"],
        "verdict": verdict,
    }


_f = functools.partial(fmt, digits=2)


def _load(values: tuple[float, float, float]) -> str:
    return "/".join(f"{v:.2f}" for v in values)


def _rel(row: sp.RunRow, moment: float | None) -> str:
    return _f(None if moment is None else moment - row.not_before)


def print_report(result: dict[str, Any], s: dict[str, Any], per_run: bool) -> None:
    c = result["config"]
    print(f"{c['targets']} directory targets on one loopback sshd host, ONE interval schedule, stagger 0 (all at "
          f"{c['fire_at']}); fio 4k randread psync QD1 {c['runtime_s']} s time_based 4 MiB direct=0 "
          f"rate_iops={c['rate_iops'] or 'off'}")  # fmt: skip
    print(f"worker: --pool threads --concurrency {c['concurrency']}{' (traced)' if c['traced_worker'] else ''}; "
          f"one beat, tick every {c['tick_s']:g} s; database {c['database']}; redis embedded")  # fmt: skip
    print(f"code: {c['code']}")
    print(f"machine: {c['cpus']} CPUs, load average (1/5/15 min) {_load(c['load_before'])} before the fire, "
          f"{_load(c['load_after'])} at the end\n")  # fmt: skip
    if per_run:
        print(f"{'run':>5} {'disk':<5} {'queued':>8} {'launch':>8} {'running':>8} {'started':>8} {'final':>8}  state"
              "  (s after not_before)")  # fmt: skip
        for r in result["rows"]:
            times = (r.queued_at, r.launch_start, r.launch_end, r.started_at, r.finished_at)
            print(f"{r.run_id:>5} {r.disk:<5} " + " ".join(f"{_rel(r, t):>8}" for t in times) + f"  {r.state}"
                  + ("" if r.state == "succeeded" else f": {r.explanation[:80]}"))  # fmt: skip
        print()
    print(f"{'seconds':<52}{'n':>4}{'p50':>8}{'p95':>8}{'max':>8}")
    lines = [
        ("launch delay: started_at - not_before (fio start)", s["launch_delay"]),
        ("  running state: launch task end - not_before", s["running_delay"]),
        *((f"  {name}", stats) for name, stats in s["phases"].items() if "finished_at" not in name),
        ("collect lag: final - (started_at + runtime)", s["collect_lag"]),
    ]
    for label, p in lines:
        print(f"{label:<52}{p['n']:>4}{_f(p['p50']):>8}{_f(p['p95']):>8}{_f(p['max']):>8}")
    rss = s["rss"]
    print(f"\nworker RSS (process tree, every {SAMPLE_S:g} s, {rss['samples']} samples): idle {rss['idle_mb']:.0f} MB "
          f"after the warm-up; during the schedule median {rss['median_mb']:.0f} MB, peak {rss['peak_mb']:.0f} MB; "
          f"up to {rss['threads_max']} threads")  # fmt: skip
    print(f"runs on the host at once (started_at .. +runtime): up to {s['on_host_at_once']} of {c['targets']}")
    cpu = result["cpu"]
    available = cpu["wall_s"] * (c["cpus"] or 1)
    busy = cpu["machine_busy_s"]
    print(f"CPU while the schedule ran: {cpu['wall_s']:.1f} s wall x {c['cpus']} CPUs; machine busy {busy:.1f} "
          f"CPU-s ({100 * busy / available:.0f} %), of which:")  # fmt: skip
    for name, seconds in sorted(cpu["by_owner_s"].items(), key=lambda item: -item[1]):
        share = f" ({100 * seconds / cpu['wall_s']:.0f} % of one CPU)" if name == "worker" else ""
        print(f"  {name:<50}{seconds:>8.1f} CPU-s{share}")
    print("idle yardsticks: " + "; ".join(f"{k} {v:.3f} s" for k, v in result["yardsticks"].items()))
    n = max(s["made"], 1)
    print("sshd during the schedule: " + ", ".join(f"{v} {k} ({v / n:.1f}/run)" for k, v in result["sshd"].items()))
    states = ", ".join(f"{k} {v}" for k, v in s["states"].items())
    print(f"\nruns: {s['made']}/{c['targets']} made, {s['succeeded']} succeeded ({states}), {s['collected']} "
          f"collected; {s['launch_tasks']} launch and {s['poll_tasks']} poll tasks")  # fmt: skip
    v = s["verdict"]
    checks = [
        (f"all {c['targets']} collected ({s['collected']})", v["collected"]),
        (
            f"every |started_at - not_before| <= {TARGET_LAUNCH_S:g} s (max {_f(s['launch_delay']['max'])} s)",
            v["launch"],
        ),
        (f"peak worker RSS <= {TARGET_RSS_MB:g} MB (peak {rss['peak_mb']:.0f} MB)", v["rss"]),
    ]
    for label, ok in checks:
        print(f"{label:<60}{'PASS' if ok else 'FAIL'}")
    print(f"overall: {'PASS' if v['all'] else 'FAIL'}")
    if result["worker_log_tail"]:
        print("\nthe end of the worker log:\n" + result["worker_log_tail"])


def to_json(result: dict[str, Any], summary: dict[str, Any]) -> str:
    from dataclasses import asdict

    extra = {key: result[key] for key in ("yardsticks", "sshd", "cpu")}
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
        lag, run, rss = s["launch_delay"], s["running_delay"], s["rss"]
        worker_cpu = out["cpu"]["by_owner_s"].get("worker", 0.0)
        queue = s["phases"]["launch task start - queued_at (queue wait)"]
        ssh = s["phases"]["started_at - launch task start (SSH launch)"]
        lines.append(f"{value:>11}  {s['made']:>2}/{s['succeeded']:>2}/{s['collected']:>2}  {_f(lag['p50']):>6} "
                     f"{_f(lag['p95']):>6} {_f(lag['max']):>6} {_f(run['max']):>6}  {_f(queue['p95']):>6} "
                     f"{_f(ssh['p50']):>6}  {s['poll_tasks'] / max(s['made'], 1):>5.1f}  {rss['peak_mb']:>5.0f} "
                     f"{rss['median_mb']:>5.0f}  {worker_cpu:>6.1f}  {c['load_before'][0]:>5.2f}  "
                     f"{'PASS' if s['verdict']['all'] else 'FAIL'}")  # fmt: skip
    print(
        "concurrency  made/ok/coll  launch delay s (fio start)  running   queue    SSH  polls   RSS MB    worker  load"
    )
    print("                             p50    p95    max    max    wait p95 launch p50 /run  peak   med   CPU-s  1min")
    print("\n".join(lines))
    return status


# ----------------------------------------------------------------------------------------- entry point


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--concurrency", default="8",
                        help="worker threads, or several comma-separated values to compare (default 8)")  # fmt: skip
    parser.add_argument("--targets", type=int, default=50, help="directory disks fired at once (default 50)")
    parser.add_argument("--runtime", type=int, default=35, help="fio runtime in seconds (default 35)")
    parser.add_argument("--rate-iops", type=int, default=50, help="fio rate_iops per run, 0 for off (default 50)")
    add_database_options(parser, DEFAULT_PG_URL, choices=DATABASES)
    parser.add_argument("--tick-seconds", type=float, default=1.0,
                        help="BENCHWEB_TICK_SECONDS for beat (default 1; the product's default is 5)")  # fmt: skip
    parser.add_argument("--lead", type=float, default=40.0,
                        help="seconds from set-up to the fire (default 40: past the claim lead, so that the runs "
                             "are claimed and launched ahead of the fire as in production)")  # fmt: skip
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for all runs (default 300)")
    parser.add_argument("--per-run", action="store_true", help="print one line per run")
    parser.add_argument("--plain-worker", action="store_true", help="start `celery -A benchweb worker` untraced")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args(argv)
    try:
        values = [int(v) for v in args.concurrency.split(",")]
    except ValueError:
        parser.error(f"--concurrency takes numbers separated by commas, got {args.concurrency!r}")
    if min(values) < 1 or args.targets < 1 or args.runtime < 1 or args.rate_iops < 0 or args.lead < 3:
        parser.error("need --concurrency, --targets, --runtime >= 1, --rate-iops >= 0 and --lead >= 3")
    if args.timeout <= 0 or args.tick_seconds <= 0:
        parser.error("need --timeout and --tick-seconds > 0")
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
    return 0 if summary["verdict"]["all"] else 1


if __name__ == "__main__":
    sys.exit(main())
