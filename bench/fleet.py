"""Fleet: a capacity bench on many loopback hosts whose fio is the stand-in (bench/standin/), issue 34.

    env -u PYTHONDONTWRITEBYTECODE .venv/bin/python bench/fleet.py [--hosts 200] [--hosts-per-sshd 15]
        [--disks 10] [--runs-per-host 3] [--spread 60] [--runtime 120] [--concurrency 8] [--lead 40]
        [--db sqlite|postgres] [--standin-cost 1000] [--timeout S] [--json]

The stack is bench/fanout.py's (a fresh temporary directory, a migrated database, an embedded redis-server, ONE
traced `celery worker --pool threads`, ONE `celery beat`), with other hosts: --hosts hosts, each a distinct
address of 127.0.0.0/8 (127.1.x.y), served at most 15 to an sshd (jobs/sshd_local's server with more
ListenAddress lines: OpenSSH listens on 16 sockets at most), each registered as a Host of its own with its
sshd's host key pinned and --disks directory disks. Every login to them finds the stand-in first on PATH
(sshd's SetEnv), so benchweb's launch, watching, collection, parsing and storing are the real ones while the
"benchmark" costs next to nothing: what is measured is benchweb, not fio. The stand-in is compiled first, into
the stack's directory (bench/standin/build.py).

Before the fleet, --standin-cost stand-ins run side by side on this machine for STANDIN_RUNTIME_S, and their CPU
is read from /proc/<pid>/schedstat (nanoseconds on the CPU) over their steady state: the target is at most 1 %
of one CPU for 1,000 of them. Each one's whole life, start to exit, is its rusage.

Then --runs-per-host runs of a 4k randrw 70/30 profile (the recording's workload, --runtime s) on each host,
their starts spread evenly over --spread s by interval schedules (fanout.plan_fires). The targets (issue 34):

    start lateness     started_at - not_before: p95 <= 1 s, max <= 3 s
    result stored      finished_at - the stand-in's end (the host's clock): p95 <= 2 s
    worker RSS         peak <= 300 MB (process tree)
    SSH logins         <= 1 per host, read from the sshd logs by the address each connection reached
    runs               every run made once, succeeded, stored with the recording's figures (counted)

A smoke run (--smoke) uses a few hosts, seconds-long runs and 20 stand-ins. Exit status: 0 targets met, 1
missed, 2 the measurement failed, 130 interrupted. Everything started here is stopped and removed, also on Ctrl-C.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import fanout
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
    login_user,
    parse_args,
    run_guarded,
    say,
    server_version,
    start_redis,
    verdict_status,
)
from standin import build

DEFAULT_PG_URL = f"{PG_SERVER}/benchweb_fleet"
TARGET_LATE_P95_S = 1.0
TARGET_LATE_MAX_S = 3.0
TARGET_STORED_P95_S = 2.0
TARGET_RSS_MB = 300.0
TARGET_LOGINS_PER_HOST = 1
TARGET_STANDIN_CPU_PER_1000 = 0.01  # CPU-s per s: 1 % of one CPU
STANDIN_RUNTIME_S = 20
STANDIN_SETTLE_S = 3
MB = 2**20
# OpenSSH's sshd listens on at most 16 sockets (MAX_LISTEN_SOCKS); jobs/sshd_local's config takes one, 127.0.0.1.
MAX_ADDRESSES_PER_SSHD = 15
# sshd's VERBOSE lines of a connection and of its login, matched in the log's order.
_CONNECTION_OR_LOGIN = re.compile(
    rb"Connection from \S+ port (\d+) on (\S+) port \d+|Accepted publickey for \S+ from \S+ port (\d+)"
)


# ----------------------------------------------------------------------------------------- the stand-in's cost


def standin_cost(stack: sp.Stack, bin_dir: Path, count: int, runtime_s: int) -> dict[str, float]:
    """`count` stand-ins at once on a job of runtime_s with a status document every second: their CPU in their
    steady state (schedstat, from STANDIN_SETTLE_S after the start to a second before their end), and their
    whole lives (rusage of each, waited for)."""
    work = stack.tmp / "standin-cost"
    work.mkdir()
    job = work / "job.fio"
    job.write_text(f"[benchweb-cost]\nioengine=psync\nrw=randrw\nrwmixread=70\nbs=4096\nruntime={runtime_s}\n"
                   f"time_based=1\nsize=16777216\ndirectory={work}\nunlink=1\n")  # fmt: skip
    settle = min(STANDIN_SETTLE_S, runtime_s / 3)
    processes = []
    try:
        for i in range(count):
            argv = [str(bin_dir / "fio"), "--output-format=json", "--status-interval=1", f"--output={work}/{i}.json",
                    str(job)]  # fmt: skip
            processes.append(subprocess.Popen(argv, stdin=subprocess.DEVNULL))
        time.sleep(settle)
        t0, before = time.monotonic(), _on_cpu_ns(processes)
        time.sleep(max(runtime_s - settle - 1.5, 0.5))
        t1, after = time.monotonic(), _on_cpu_ns(processes)
        lives = []
        for process in processes:
            _, status, usage = os.wait4(process.pid, 0)
            process.returncode = os.waitstatus_to_exitcode(status)
            if process.returncode:
                raise BenchError(f"a stand-in exited with status {process.returncode}")
            lives.append(usage.ru_utime + usage.ru_stime)
    finally:
        for process in processes:
            if process.returncode is None:
                process.kill()
                process.wait()
    documents = sum((work / f"{i}.json").read_text().count('"fio version"') for i in range(count))
    steady = (after - before) / 1e9 / (t1 - t0)
    return {
        "stand-ins": count,
        "runtime_s": runtime_s,
        "steady CPU-s per s, all": steady,
        "steady CPU-s per s per 1000": steady * 1000 / count,
        "whole life CPU-ms each (mean)": 1000 * sum(lives) / count,
        "documents each (mean)": documents / count,
    }


def _on_cpu_ns(processes: list[subprocess.Popen[bytes]]) -> int:
    total = 0
    for process in processes:
        with contextlib.suppress(OSError, ValueError):
            total += int(Path(f"/proc/{process.pid}/schedstat").read_text().split()[0])
    return total


# ----------------------------------------------------------------------------------------- the fleet


def address_of(host: int) -> str:
    """Host n (from 0) listens on 127.1.<n // 250>.<n % 250 + 1>: 62,500 addresses, none of them 127.0.0.1."""
    return f"127.1.{host // 250}.{host % 250 + 1}"


def client_key(stack: sp.Stack) -> tuple[str, str]:
    """A new login key in stack.tmp / "client": (private key text, public key line)."""
    from jobs import sshd_local

    client = stack.tmp / "client"
    client.mkdir()
    return sshd_local.generate_user_key(client)


def start_fleet_sshds(stack: sp.Stack, numbers: range, per_sshd: int, bin_dir: Path, public_key: str) -> list[Any]:
    """The sshds of hosts `numbers` (also added to stack.sshds), each listening on the addresses of per_sshd of
    them in turn, every login's PATH starting with the stand-in's directory."""
    from jobs import sshd_local

    path = f"{bin_dir}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    started = []
    for first in range(numbers.start, numbers.stop, per_sshd):
        workdir = stack.tmp / f"sshd-{len(stack.sshds) + 1}"
        sshd = sshd_local.start_sshd(workdir, authorized_keys=[public_key])
        stack.sshds.append(sshd)  # stopped by stack.close() even if the restart below fails
        started.append(sshd)
        served = range(first, min(first + per_sshd, numbers.stop))
        # One sshd stands for `per_sshd` hosts, each of which would have its own limits: MaxStartups (OpenSSH's
        # 10:30:100 unauthenticated connections) and MaxSessions (benchkit.SSHD_EXTRA_CONFIG's) are theirs summed.
        # SHLVL=1: bash, the login shell here, then reads no ~/.bashrc for a command sent over SSH (it does for a
        # top-level shell only); this machine's runs pyenv's set-up, 0.3 CPU-s a command, which a fleet's hosts
        # do not pay (bench/start_precision.py's yardstick "local `$SHELL -c true`" shows it). STANDIN_STARTS_ENV:
        # every stand-in notes its start there (bench/standin/standin.c), so that a run started twice shows.
        lines = [*(f"ListenAddress {address_of(h)}" for h in served),
                 f"SetEnv PATH={path} SHLVL=1 {build.STARTS_ENV}={stack.tmp / 'standin-starts'}", "MaxSessions 1000",
                 f"MaxStartups {10 * len(served)}:30:{100 * len(served)}"]  # fmt: skip
        with (workdir / "sshd_config").open("a") as config:
            config.write("\n".join(lines) + "\n")
        sshd.restart()  # same port and keys, the addresses and PATH read
    stack.sshd = stack.sshds[0]
    return started


def fleet_credential(private_key: str) -> Any:
    """A team and its key credential."""
    from jobs.models import Credential, Team

    team = Team.objects.create(name="fleet bench")
    credential = Credential(team=team, name="bench key", kind=Credential.Kind.PRIVATE_KEY)
    credential.set_secret(private_key)
    credential.save()
    return credential


def fleet_hosts(stack: sp.Stack, credential: Any, numbers: range, sshds: list[Any], per_sshd: int,
                site: str = "") -> list[Any]:  # fmt: skip
    """Hosts "fleet-001" ... for `numbers` (from 0), of `site`, each on its address and its sshd's port (sshds
    serve per_sshd of them in turn, from numbers.start) with that sshd's host key pinned, with run bases
    stack.runs_base / "h1", "h2", ..."""
    from jobs.models import Host

    made = []
    for h in numbers:
        sshd = sshds[(h - numbers.start) // per_sshd]
        key = sshd.host_key
        made.append(Host.objects.create(
            team=credential.team, name=f"fleet-{h + 1:03d}", address=address_of(h), port=sshd.port,
            username=login_user(), credential=credential, host_key_type=key.key_type, host_key_b64=key.key_b64,
            host_key_fingerprint=key.fingerprint, run_base_dir=str(stack.runs_base / f"h{h + 1}"), site=site,
        ))  # fmt: skip
    return made


def make_profile(team: Any, runtime_s: int) -> Any:
    """The recording's workload (tests/fixtures/fio-3.33-randrw-status-interval.json): 4k randrw 70/30, psync,
    O_DIRECT, time_based, a 16 MiB file; the stand-in scales its counters to runtime_s."""
    from jobs.models import Profile

    return Profile.objects.create(
        team=team, name=f"fleet 4k randrw {runtime_s} s", rw="randrw", read_percent=70, block_size_bytes=4096,
        iodepth=1, jobs=1, runtime_s=runtime_s, time_based=True, ioengine="psync", direct=True,
        size_bytes=16 * MB,
    )  # fmt: skip


class RssMeter(fanout.RssMeter):
    """The worker's resident memory every SAMPLE_S seconds, from /proc/<pid>/statm: fanout's meter sums a process
    tree, which costs a scan of every process (thousands here: each run's wrapper, flock, timeout and stand-in)."""

    def _loop(self) -> None:
        page = os.sysconf("SC_PAGE_SIZE")
        while True:
            with contextlib.suppress(OSError, ValueError):
                rss = int(Path(f"/proc/{self.pid}/statm").read_text().split()[1]) * page
                self.samples.append((time.monotonic(), rss, len(os.listdir(f"/proc/{self.pid}/task"))))
            if self._stop.wait(fanout.SAMPLE_S):
                return


def cpu_snapshot(stack: sp.Stack) -> dict[str, float]:
    """CPU seconds so far: the machine's busy time, the worker's process tree, and every sshd's with the sessions
    and commands it has reaped (sampling every process while thousands run cost this script more than the worker
    in fanout.py's way)."""
    import psutil

    return {
        "wall_s": time.monotonic(),
        "machine busy": machine_busy_s(),
        "worker": sp.tree_cpu_s(psutil.Process(stack.worker.pid)),
        "sshd and sessions": sp.trees_cpu_s([s.process.pid for s in stack.sshds]),
    }


def machine_busy_s() -> float:
    """The machine's busy CPU seconds so far, over all its CPUs."""
    import psutil

    t = psutil.cpu_times()
    return t.user + t.nice + t.system + t.irq + t.softirq + t.steal


def logins_by_address(stack: sp.Stack, offsets: list[int]) -> dict[str, int]:
    """SSH logins after `offsets` in each sshd's log, by the address the connection reached (LogLevel VERBOSE
    logs "Connection from A port P on B port Q", then "Accepted publickey ... port P")."""
    logins: dict[str, int] = {}
    for sshd, offset in zip(stack.sshds, offsets, strict=True):
        with sshd.log_path.open("rb") as log:
            log.seek(offset)
            text = log.read()
        for address, count in logins_in(text).items():
            logins[address] = logins.get(address, 0) + count
    return logins


def logins_in(log: bytes) -> dict[str, int]:
    """The logins of one sshd's log by the address each reached: a login is its connection's, the last one from its
    client port before it (a port comes back over a long measurement: 400 connections on one sshd's ports reuse
    some, and a map of every port's last connection credited those logins to the wrong hosts)."""
    reached: dict[bytes, str] = {}
    logins: dict[str, int] = {}
    for match in _CONNECTION_OR_LOGIN.finditer(log):
        port, address, login_port = match.groups()
        if login_port is None:
            reached[port] = address.decode()
        else:
            where = reached.get(login_port, "unknown")
            logins[where] = logins.get(where, 0) + 1
    return logins


def measure(args: argparse.Namespace, stack: sp.Stack) -> dict[str, Any]:
    configure_django(stack, args.db, args.database_url)
    say("building the fio stand-in ...")
    bin_dir = build.build(stack.tmp / "standin")
    seconds = 3 if args.smoke else STANDIN_RUNTIME_S
    say(f"{args.standin_cost} stand-ins side by side for {seconds} s ...")
    cost = standin_cost(stack, bin_dir, args.standin_cost, seconds)
    if args.standin_only:
        return {"standin": cost}
    sshds = -(-args.hosts // args.hosts_per_sshd)
    say(f"starting redis, {sshds} sshd for {args.hosts} hosts, {args.disks} disks each, and the worker ...")
    start_redis(stack)
    private_key, public_key = client_key(stack)
    sshds_started = start_fleet_sshds(stack, range(args.hosts), args.hosts_per_sshd, bin_dir, public_key)
    hosts = fleet_hosts(stack, fleet_credential(private_key), range(args.hosts), sshds_started, args.hosts_per_sshd)
    team = hosts[0].team
    disks = fanout.make_disks(stack, hosts, [args.disks] * args.hosts)
    targets = args.hosts * args.runs_per_host
    fires = fanout.plan_fires(targets, args.hosts, args.spread)
    profile = make_profile(team, args.runtime)
    sp.start_worker(stack, args.concurrency, plain=False)
    say("idle yardsticks: SSH logins and commands, one 2 s warm-up run on the stand-in ...")
    yardsticks = sp.idle_yardsticks(stack, hosts[0], make_profile(team, 2))
    rss_idle, _ = fanout.tree_rss(stack.worker.pid)
    offsets = [sshd.log_path.stat().st_size for sshd in stack.sshds]
    rss = RssMeter(stack.worker.pid)
    sp.start_beat(stack)
    schedules = fanout.make_schedules(team, disks, profile, fires, args.lead)
    cpu_before = cpu_snapshot(stack)
    rss.start()
    fire_at = min(s.next_fire_at for s in schedules)
    timeout = args.timeout or args.lead + args.spread + args.runtime + 180
    say(f"{len(schedules)} schedules fire {targets} runs on {args.hosts} hosts from {fire_at:%H:%M:%S} UTC over "
        f"{args.spread:g} s; waiting up to {timeout:g} s for all of them to be final")  # fmt: skip
    try:
        done = sp.wait_for_runs(schedules, targets, time.monotonic() + timeout)
    finally:
        rss.stop()
    cpu = {name: value - cpu_before[name] for name, value in cpu_snapshot(stack).items()}
    time.sleep(1.5)  # the last tasks' end lines
    trace = sp.read_trace(stack)
    config = {
        "db": args.db, "hosts": args.hosts, "sshds": sshds, "disks_per_host": args.disks,
        "runs_per_host": args.runs_per_host, "targets": targets, "spread_s": args.spread, "runtime_s": args.runtime,
        "concurrency": args.concurrency, "lead_s": args.lead, "timeout_s": timeout, "fire_at": fire_at.isoformat(),
        "schedules": len(schedules), "cpus": os.cpu_count(), "all_final": done, "database": server_version(),
        "code": code_version(),
    }  # fmt: skip
    return {
        "config": config,
        "rows": sp.collect(schedules, trace),
        "standin": cost,
        "yardsticks": yardsticks,
        **count_runs(stack, sp.runs_of(schedules)),
        "launch_tasks": trace.launch_tasks,
        "rss": {"idle_bytes": rss_idle, "samples": rss.samples},
        "logins": logins_by_address(stack, offsets),
        "cpu": cpu,
        "worker_log_tail": "" if done else stack.worker_log.read_text(errors="replace")[-4000:],
    }


def standin_starts(stack: sp.Stack) -> dict[str, int]:
    """The stand-in's starts by run directory: the directory of each output file it noted (STARTS_ENV)."""
    counts: dict[str, int] = {}
    path = stack.tmp / "standin-starts"
    for line in path.read_text().splitlines() if path.exists() else []:
        directory = line.rsplit("/", 1)[0]
        counts[directory] = counts.get(directory, 0) + 1
    return counts


def count_runs(stack: sp.Stack, runs: Any) -> dict[str, int]:
    """What became of the runs (a queryset), counted: collected, stored with the recording's figures, the most on
    one disk, and how many had their tool started once, more than once or never (the stand-in's own notes)."""
    from django.db.models import Count

    from jobs.models import Run
    from jobs.tools import fio

    recorded = fio.parse_fio_json(build.RECORDING.read_text()).summary_with_bins()
    as_recorded = sum(
        (summary or {}).get("total") == recorded["total"] and (summary or {}).get("read") == recorded["read"]
        for summary in runs.values_list("summary", flat=True)
    )
    per_disk = list(runs.values("disk").annotate(n=Count("pk")).values_list("n", flat=True))
    starts = standin_starts(stack)
    started = [starts.get(directory.rstrip("/"), 0) for directory in runs.values_list("remote_dir", flat=True)]
    return {
        "collected": runs.filter(state__in=(Run.State.SUCCEEDED, Run.State.FAILED)).exclude(raw_output="").count(),
        "as_recorded": as_recorded,
        "runs_per_disk_max": max(per_disk, default=0),
        "started_once": started.count(1),
        "started_twice_or_more": sum(n > 1 for n in started),
        "never_started": started.count(0),
    }


# ----------------------------------------------------------------------------------------- the figures


def summarise(result: dict[str, Any]) -> dict[str, Any]:
    rows: list[sp.RunRow] = result["rows"]
    c = result["config"]
    n = c["targets"]
    late = sp.percentiles([r.started_at - r.not_before for r in rows if r.started_at is not None])
    stored = sp.percentiles([r.finished_at - r.tool_end for r in rows if r.finished_at and r.tool_end])
    run_minutes = sum(r.tool_end - r.started_at for r in rows if r.started_at and r.tool_end) / 60
    rss_mb = [b / MB for _, b, _ in result["rss"]["samples"]] or [0.0]
    logins = result["logins"]
    succeeded = sum(r.state == "succeeded" for r in rows)
    worker_cpu = result["cpu"]["worker"]
    cost = result["standin"]["steady CPU-s per s per 1000"]
    verdict = {
        "runs": len(rows) == n and succeeded == n and result["collected"] == n and result["as_recorded"] == n
        and result["runs_per_disk_max"] == 1 and result["started_once"] == n,
        "late_p95": late["n"] == n and late["p95"] <= TARGET_LATE_P95_S,
        "late_max": late["n"] == n and late["max"] <= TARGET_LATE_MAX_S,
        "stored_p95": stored["n"] == n and stored["p95"] <= TARGET_STORED_P95_S,
        "rss": max(rss_mb) <= TARGET_RSS_MB,
        "logins": max(logins.values(), default=0) <= TARGET_LOGINS_PER_HOST,
        "standin": cost <= TARGET_STANDIN_CPU_PER_1000,
    }  # fmt: skip
    verdict["all"] = all(verdict.values())
    return {
        "made": len(rows),
        "succeeded": succeeded,
        "start_lateness": late,
        "stored_after_end": stored,
        "rss_idle_mb": result["rss"]["idle_bytes"] / MB,
        "rss_peak_mb": max(rss_mb),
        "logins_max": max(logins.values(), default=0),
        "hosts_logged_in": len(logins),
        "worker_cpu_s": worker_cpu,
        "worker_cpu_s_per_run_minute": worker_cpu / run_minutes if run_minutes else None,
        "verdict": verdict,
    }


def standin_line(cost: dict[str, float]) -> str:
    return (f"the stand-in alone: {cost['stand-ins']} at once, {cost['runtime_s']} s jobs, "
            f"{cost['documents each (mean)']:.1f} documents each; steady state {cost['steady CPU-s per s, all']:.5f} "
            f"CPU-s per s for all = {100 * cost['steady CPU-s per s per 1000']:.3f} % of one CPU per 1,000; whole "
            f"life {cost['whole life CPU-ms each (mean)']:.2f} CPU-ms each (rusage)")  # fmt: skip


def print_report(result: dict[str, Any], s: dict[str, Any]) -> None:
    c, cost = result["config"], result["standin"]
    _f = fmt
    print(f"{c['hosts']} loopback hosts (127.1.x.y) on {c['sshds']} sshd, {c['disks_per_host']} directory disks each; "
          f"{c['runs_per_host']} runs per host = {c['targets']} runs of {c['runtime_s']} s, starts spread over "
          f"{c['spread_s']:g} s by {c['schedules']} schedules from {c['fire_at']}")  # fmt: skip
    print(
        f"fio: the stand-in (bench/standin/) replaying {build.RECORDING.name}; worker --pool threads --concurrency "
        f"{c['concurrency']} (traced), one beat; database {c['database']}; {c['cpus']} CPUs; code: {c['code']}"
    )
    print("\n" + standin_line(cost))
    print(f"\n{'seconds':<52}{'n':>5}{'p50':>8}{'p95':>8}{'max':>8}")
    for label, p in (("start lateness: started_at - not_before", s["start_lateness"]),
                     ("result stored: finished_at - stand-in end (host)", s["stored_after_end"])):  # fmt: skip
        print(f"{label:<52}{p['n']:>5}{_f(p['p50'], 2):>8}{_f(p['p95'], 2):>8}{_f(p['max'], 2):>8}")
    per_minute = s["worker_cpu_s_per_run_minute"]
    print(f"\nworker RSS (process tree): idle {s['rss_idle_mb']:.0f} MB, peak {s['rss_peak_mb']:.0f} MB; worker CPU "
          f"{s['worker_cpu_s']:.1f} s = {_f(per_minute, 3)} s per run-minute")  # fmt: skip
    print(f"SSH logins: {sum(result['logins'].values())} on {s['hosts_logged_in']} hosts, at most {s['logins_max']} "
          "per host")  # fmt: skip
    cpu = result["cpu"]
    print(f"CPU while the schedules ran ({cpu['wall_s']:.0f} s wall x {c['cpus']} CPUs): " + ", ".join(
        f"{name} {seconds:.1f} CPU-s" for name, seconds in cpu.items() if name != "wall_s"))  # fmt: skip
    print("idle yardsticks: " + "; ".join(f"{k} {v:.3f} s" for k, v in result["yardsticks"].items()))
    print(f"runs: {s['made']}/{c['targets']} made, {s['succeeded']} succeeded, {result['collected']} collected, "
          f"{result['as_recorded']} stored with the recording's figures, at most {result['runs_per_disk_max']} run "
          f"per disk; {result['launch_tasks']} launch tasks; the tool started once for {result['started_once']}, "
          f"twice or more for {result['started_twice_or_more']}, never for {result['never_started']}")  # fmt: skip
    for r in [r for r in result["rows"] if r.state != "succeeded"][:10]:
        print(f"  run {r.run_id} ({r.host} {r.disk}) {r.state}: {r.explanation[:200]}")
    v, late, stored = s["verdict"], s["start_lateness"], s["stored_after_end"]
    checks = [
        (f"every run made once, succeeded, as recorded ({c['targets']})", f"{result['as_recorded']}", v["runs"]),
        (f"start lateness p95 <= {TARGET_LATE_P95_S:g} s", f"{_f(late['p95'], 2)} s", v["late_p95"]),
        (f"start lateness max <= {TARGET_LATE_MAX_S:g} s", f"{_f(late['max'], 2)} s", v["late_max"]),
        (f"stand-in end -> result stored p95 <= {TARGET_STORED_P95_S:g} s", f"{_f(stored['p95'], 2)} s",
         v["stored_p95"]),
        (f"worker RSS peak <= {TARGET_RSS_MB:g} MB", f"{s['rss_peak_mb']:.0f} MB", v["rss"]),
        (f"SSH logins <= {TARGET_LOGINS_PER_HOST} per host", f"max {s['logins_max']}", v["logins"]),
        ("stand-in CPU <= 1 % of one CPU per 1,000", f"{100 * cost['steady CPU-s per s per 1000']:.3f} %",
         v["standin"]),
    ]  # fmt: skip
    print(f"\n{'target':<52}{'measured':>16}  verdict")
    for label, measured, ok in checks:
        print(f"{label:<52}{measured:>16}  {'met' if ok else 'MISSED'}")
    print(f"overall: {'all targets met' if v['all'] else 'targets missed'}")
    if result["worker_log_tail"]:
        print("\nthe end of the worker log:\n" + result["worker_log_tail"])


def to_json(result: dict[str, Any], summary: dict[str, Any]) -> str:
    from dataclasses import asdict

    keep = ("config", "standin", "yardsticks", "logins", "cpu", "collected", "as_recorded", "runs_per_disk_max",
            "started_once", "started_twice_or_more", "never_started")  # fmt: skip
    return json.dumps({key: result[key] for key in keep} | {"summary": summary,
                      "runs": [asdict(r) for r in result["rows"]]}, indent=2)  # fmt: skip


# ----------------------------------------------------------------------------------------- entry point


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, default=200, help="loopback hosts (default 200)")
    parser.add_argument("--hosts-per-sshd", type=int, default=MAX_ADDRESSES_PER_SSHD,
                        help=f"addresses one sshd serves (default and most {MAX_ADDRESSES_PER_SSHD})")  # fmt: skip
    parser.add_argument("--disks", type=int, default=10, help="directory disks per host (default 10)")
    parser.add_argument("--runs-per-host", type=int, default=3, help="runs on each host, one per disk (default 3)")
    parser.add_argument("--spread", type=float, default=60.0, help="seconds the starts are spread over (default 60)")
    parser.add_argument("--runtime", type=int, default=120, help="each run's runtime in seconds (default 120)")
    parser.add_argument("--concurrency", type=int, default=8, help="worker threads (default 8)")
    parser.add_argument("--lead", type=float, default=40.0,
                        help="seconds from set-up to the first fire (default 40: past the claim lead)")  # fmt: skip
    parser.add_argument("--timeout", type=float, default=0.0,
                        help="seconds to wait for all runs (default lead + spread + runtime + 180)")  # fmt: skip
    parser.add_argument("--standin-cost", type=int, default=1000,
                        help="stand-ins run side by side to measure what they cost (default 1000)")  # fmt: skip
    parser.add_argument("--standin-only", action="store_true", help="measure the stand-in's cost only, no fleet")
    parser.add_argument("--tick-seconds", type=float, default=1.0, help="BENCHWEB_TICK_SECONDS for beat (default 1)")
    add_database_options(parser, DEFAULT_PG_URL, choices=DATABASES)
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    add_smoke_option(parser, hosts=3, hosts_per_sshd=2, disks=2, runs_per_host=1, spread=0.0, runtime=3, lead=3.0,
                     concurrency=2, standin_cost=20)  # fmt: skip
    args = parse_args(parser, argv)
    if min(args.hosts, args.hosts_per_sshd, args.disks, args.runs_per_host, args.runtime, args.concurrency) < 1:
        parser.error("--hosts, --hosts-per-sshd, --disks, --runs-per-host, --runtime and --concurrency must be >= 1")
    if args.hosts_per_sshd > MAX_ADDRESSES_PER_SSHD:
        parser.error(f"--hosts-per-sshd: OpenSSH listens on {MAX_ADDRESSES_PER_SSHD + 1} sockets at most, 127.0.0.1 "
                     f"and {MAX_ADDRESSES_PER_SSHD} more (MAX_LISTEN_SOCKS)")  # fmt: skip
    if args.runs_per_host > args.disks:
        parser.error("--runs-per-host is one run per disk: at most --disks")
    if args.lead < 3 or args.spread < 0 or args.standin_cost < 1:
        parser.error("need --lead >= 3, --spread >= 0 and --standin-cost >= 1")
    interrupt_on_signals()
    stack = sp.Stack("benchweb-fleet-", args.tick_seconds)

    def work() -> tuple[dict[str, Any], dict[str, Any]]:
        result = measure(args, stack)
        return result, {} if args.standin_only else summarise(result)

    status, done = run_guarded("fleet", stack, work)
    if done is None:
        return status
    result, summary = done
    if args.standin_only:
        print(json.dumps(result["standin"]) if args.json else standin_line(result["standin"]))
        return verdict_status(args, result["standin"]["steady CPU-s per s per 1000"] <= TARGET_STANDIN_CPU_PER_1000)
    if args.json:
        print(to_json(result, summary))
    else:
        print_report(result, summary)
    return verdict_status(args, summary["verdict"]["all"])


if __name__ == "__main__":
    sys.exit(main())
