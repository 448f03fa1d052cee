"""Fleet across sites: bench/fleet.py's loopback hosts split between sites that are network namespaces, each served
by workers of its own, and one of those workers killed with -9 mid-way (issue 34, "Outgrow one machine").

    env -u PYTHONDONTWRITEBYTECODE .venv/bin/python bench/fleet_sites.py [--sites 2] [--workers-per-site 2]
        [--hosts 200] [--hosts-per-sshd 15] [--disks 10] [--runs-per-host 10] [--spread 60] [--runtime 120]
        [--concurrency 8] [--lead 40] [--kill-worker-at-active N] [--db sqlite|postgres] [--timeout S] [--json]

Issue 34's measurement is `--db postgres --kill-worker-at-active 1000` with the defaults: 200 hosts of 10 disks,
2,000 runs of 120 s whose starts are spread over 60 s, on 4 site workers. It needs root (for the namespaces);
without them it says why and exits 2.

What is set up, in a fresh temporary directory (bench/fleet.py's stack: a migrated database, an embedded
redis-server, the fio stand-in of bench/standin/ first on every login's PATH):

- a network namespace a site (`ip netns add bw<pid>s1`, its loopback up), named after this process so that two
  runs do not clash. Site k's hosts (an even share of --hosts, sites s1, s2, ...) are 127.1.x.y addresses inside
  it, served by sshds started in it (jobs/sshd_local's start_sshd(), called from a thread moved into the namespace
  with setns(2): the sshd it forks and the probe of its banner are in the namespace), each host registered with
  its site;
- --workers-per-site traced Celery workers a site (`ip netns exec bw<pid>sK ... worker -Q site.sK`), which
  reach that site's hosts and no other (the set-up checks it: a TCP connection from each namespace to a host of
  each site must succeed for its own and fail for the others);
- in the root namespace: beat, and one worker for the default queue (beat's ticks and sweeps, which talk to no
  host; the site workers take only their site's queue, as docs/operations/sites.md deploys them).

The workers reach Redis and the database through the filesystem, not through TCP: Redis listens on a unix socket
in the stack's directory, SQLite is a file, and PostgreSQL is reached through the server's own unix socket (its
`unix_socket_directories`, checked before anything starts: the server must let this user in over it). A socket
file is reachable from every network namespace, so no veth pair and no forwarder are needed; a forwarder in this
process would have put every database round trip of four busy workers through Python on the CPUs being measured.

Measured, as in bench/fleet.py: start lateness (started_at - not_before: p95 <= 1 s, max <= 3 s), result stored
after the stand-in's end (p95 <= 2 s), every run made once, succeeded and stored with the recording's figures,
its tool started once (the stand-in notes every start), counted. Per site worker: peak RSS (<= 300 MB), CPU
seconds, logins per host (<= 1: each worker logs every session it opens, and the sshd logs must count the same
logins per host), and logins to a host of another site (none).

--kill-worker-at-active N: when N runs are running, the site worker whose observer holds the most hosts is
killed with SIGKILL (its whole process group). The hosts it held are those whose observer token is one it adopted
(its trace of jobs.observe_host); the runs it held are their running runs and the runs whose launch or
collection it had begun and not ended. Reported: from the kill until a worker alive took each of them again (its
host's jobs.observe_host, or the run's own task, in a live worker's trace) and until the last of them was
stored; and every run counted as above: none lost, none run twice. No target is set for the recovery: the
product's sweep picks up runs whose heartbeat is 30 s old (jobs/runs/sweeping.py STALE_AFTER), which bounds it
from below.

A smoke run (--smoke) uses 4 hosts on 2 sites, 2 workers each, runs of a few seconds and the kill at the first
running run; the sweep's 30 s make most of its minute. Exit status: 0 targets met, 1 missed, 2 the measurement
failed (or no network namespaces), 130 interrupted. Everything started here is stopped and removed, the
namespaces too, also on Ctrl-C.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

import fanout
import fleet
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
    network_namespaces_problem,
    parse_args,
    run_guarded,
    say,
    server_version,
    spawn,
    start_redis,
    stop_group,
    verdict_status,
    wait_until,
    worker_options,
)
from standin import build

DEFAULT_PG_URL = f"{PG_SERVER}/benchweb_fleet_sites"
CLONE_NEWNET = 0x40000000
SHIM = Path(sp.__file__).resolve()
CENTRAL_CONCURRENCY = 2
# The CPU meter's period (CpuMeter): each sample reads every process of the machine (4,600 at 2,000 runs).
CPU_SAMPLE_S = 5.0
# The tasks whose first argument is the run they work on; jobs.launch_runs carries a list of them.
RUN_TASKS = ("jobs.launch_run", "jobs.collect_run", "jobs.poll_run", "jobs.stop_run")
_LOGGED_IN = re.compile(r"logged in to host (\S+) \(site (\S+)\)")


# ----------------------------------------------------------------------------------------- namespaces and workers


@dataclass
class Worker:
    name: str
    site: str
    namespace: str
    process: subprocess.Popen[bytes]
    log: Path
    trace: Path
    rss: fleet.RssMeter | None = None
    cpu_at_start: float = 0.0
    cpu_s: float | None = None
    killed_at: float | None = None  # epoch seconds


class SitesStack(sp.Stack):
    """fleet's stack with network namespaces and several workers; close() stops the workers first and deletes the
    namespaces last."""

    def __init__(self, prefix: str, tick_seconds: float) -> None:
        super().__init__(prefix, tick_seconds)
        self.namespaces: list[str] = []
        self.site_workers: list[Worker] = []

    def close(self) -> None:
        stop_group(self.beat, grace=10)
        for worker in self.site_workers:
            stop_group(worker.process, grace=20)
            if worker.rss is not None:
                worker.rss.stop()
        super().close()
        for name in self.namespaces:
            done = subprocess.run(["ip", "netns", "del", name], capture_output=True, text=True, check=False)
            if done.returncode:
                say(f"could not delete the network namespace {name}: {done.stderr.strip()}")


def add_namespace(stack: SitesStack, name: str) -> None:
    subprocess.run(["ip", "netns", "add", name], check=True, capture_output=True)
    stack.namespaces.append(name)
    subprocess.run(["ip", "-n", name, "link", "set", "lo", "up"], check=True, capture_output=True)


@contextlib.contextmanager
def in_namespace(name: str) -> Iterator[None]:
    """This thread in network namespace `name` (setns(2) moves the calling thread only): the sockets it opens and
    the processes it starts are there."""
    libc = ctypes.CDLL(None, use_errno=True)
    own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    target = os.open(f"/run/netns/{name}", os.O_RDONLY)
    try:
        if libc.setns(target, CLONE_NEWNET):
            raise OSError(ctypes.get_errno(), f"setns into network namespace {name}")
        yield
    finally:
        if libc.setns(own, CLONE_NEWNET):
            raise OSError(ctypes.get_errno(), "setns back into this process's network namespace")
        os.close(own)
        os.close(target)


def reaches(namespace: str, host: Any) -> bool:
    """Whether a TCP connection from the namespace to the host's sshd opens."""
    with in_namespace(namespace), contextlib.suppress(OSError):
        socket.create_connection((host.address, host.port), timeout=2).close()
        return True
    return False


def worker_database_url() -> str:
    """DATABASE_URL as a process in another network namespace reaches the database: SQLite is a file; PostgreSQL is
    asked for its unix socket's directory, and this process logs in through it once to show that it lets us in."""
    url = os.environ["DATABASE_URL"]
    if not url.startswith("postgres"):
        return url
    import psycopg
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SHOW unix_socket_directories")
        directory = cursor.fetchone()[0].split(",")[0].strip()
    parts = urlsplit(url)
    if not directory.startswith("/"):
        raise BenchError(f"PostgreSQL's unix socket directory is {directory!r}: the site workers need a path one")
    try:
        psycopg.connect(host=directory, port=parts.port or 5432, user=parts.username, password=parts.password,
                        dbname=parts.path.lstrip("/"), connect_timeout=10).close()  # fmt: skip
    except psycopg.Error as exc:
        raise BenchError(f"the site workers reach PostgreSQL through its unix socket in {directory}, which "
                         f"refused this user: {exc} (allow it in pg_hba.conf's `local` lines, or use --db "
                         "sqlite)") from exc  # fmt: skip
    user = parts.username or ""
    if parts.password:
        user += f":{parts.password}"
    return urlunsplit((parts.scheme, f"{user}@{quote(directory, safe='')}:{parts.port or 5432}", parts.path, "", ""))


def start_workers(stack: SitesStack, sites: list[tuple[str, str]], per_site: int, concurrency: int) -> None:
    """The default queue's worker here (stack.worker) and per_site workers in each (site, namespace), all traced;
    returns once every one says it is ready."""
    env = stack.env()
    env.pop("BENCHWEB_WORKER_EVERY_SITE", None)  # a site worker serves its -Q queue only
    database_url = worker_database_url()
    for site, namespace in sites:
        for i in range(1, per_site + 1):
            name = f"{site}-{i}"
            log, trace = stack.tmp / f"worker-{name}.log", stack.tmp / f"trace-{name}.jsonl"
            argv = ["ip", "netns", "exec", namespace, sys.executable, str(SHIM), "--worker-shim",
                    *worker_options(concurrency, f"site-{name}"), "-Q", f"site.{site}"]  # fmt: skip
            process = spawn(argv, log, env | {sp.TRACE_ENV: str(trace), "DATABASE_URL": database_url})
            stack.site_workers.append(Worker(name, site, namespace, process, log, trace))
    argv = [sys.executable, str(SHIM), "--worker-shim", *worker_options(CENTRAL_CONCURRENCY, "central"),
            "-Q", "celery"]  # fmt: skip
    stack.worker = spawn(argv, stack.worker_log, env | {sp.TRACE_ENV: str(stack.tmp / "trace-central.jsonl")})
    for worker in stack.site_workers:
        wait_until(f"worker {worker.name}", lambda w=worker: b" ready." in w.log.read_bytes(), worker.process, 120,
                   worker.log)  # fmt: skip
    wait_until("the default queue's worker", lambda: b" ready." in stack.worker_log.read_bytes(), stack.worker, 120,
               stack.worker_log)  # fmt: skip


# ----------------------------------------------------------------------------------------- the traces


def trace_lines(path: Path) -> Iterator[tuple[str, float, str, str, list[Any], float | None]]:
    """(start or end, epoch seconds, task name, task id, args, the task's thread CPU at its end or None) of each line
    of a worker's trace (start_precision's shim); a line that is not one is left out."""
    if not path.exists():
        return
    for line in path.read_text().splitlines():
        with contextlib.suppress(ValueError):
            kind, at, name, task_id, args, _extra, *rest = json.loads(line)
            yield kind, at, name, task_id, args, rest[0] if rest else None


def trace_events(path: Path) -> Iterator[tuple[str, float, str, list[Any]]]:
    """(start or end, epoch seconds, task name, args) of each line of a worker's trace."""
    for kind, at, name, _task_id, args, _cpu in trace_lines(path):
        yield kind, at, name, args


def task_costs(workers: list[Worker]) -> list[dict[str, Any]]:
    """Per task name over the site workers' traces: how many ended, their wall time (p50, p95) and the CPU their
    thread used (sum, and per task): what a worker's CPU went to besides its observer's loop and threads."""
    begun: dict[str, float] = {}
    walls: dict[str, list[float]] = {}
    cpus: dict[str, float] = {}
    for worker in workers:
        for kind, at, name, task_id, _args, cpu in trace_lines(worker.trace):
            if kind == "start":
                begun[task_id] = at
            elif task_id in begun:
                walls.setdefault(name, []).append(at - begun.pop(task_id))
                cpus[name] = cpus.get(name, 0.0) + float(cpu or 0.0)
    return [{"task": name, "n": len(wall), "wall": sp.percentiles(wall), "cpu_s": cpus[name],
             "cpu_per_task_s": cpus[name] / len(wall)} for name, wall in sorted(walls.items())]  # fmt: skip


def adopted_tokens(worker: Worker) -> set[tuple[int, str]]:
    """(host, token) of every jobs.observe_host the worker began."""
    return {(args[0], args[1]) for kind, _, name, args in trace_events(worker.trace)
            if kind == "start" and name == "jobs.observe_host" and len(args) == 2}  # fmt: skip


def runs_in_hand(worker: Worker) -> set[int]:
    """The runs whose task (launch, collection, poll, stop) the worker began and did not end."""
    open_tasks: dict[int, int] = {}
    for kind, _, name, args in trace_events(worker.trace):
        if name in RUN_TASKS and args:
            open_tasks[args[0]] = open_tasks.get(args[0], 0) + (1 if kind == "start" else -1)
    return {run for run, n in open_tasks.items() if n > 0}


def taken_again(workers: list[Worker], after: float) -> tuple[dict[int, float], dict[int, float]]:
    """The first moment after `after` that a worker took each host (jobs.observe_host) and each run (its own task,
    or a jobs.launch_runs fan-out holding it), by host and by run."""
    hosts: dict[int, float] = {}
    runs: dict[int, float] = {}
    for worker in workers:
        for kind, at, name, args in trace_events(worker.trace):
            if kind != "start" or at < after or not args:
                continue
            if name == "jobs.observe_host":
                hosts[args[0]] = min(at, hosts.get(args[0], at))
            elif name in RUN_TASKS:
                runs[args[0]] = min(at, runs.get(args[0], at))
            elif name == "jobs.launch_runs":
                for run in args[0]:
                    runs[run] = min(at, runs.get(run, at))
    return hosts, runs


# ----------------------------------------------------------------------------------------- the kill


class CpuMeter(threading.Thread):
    """The machine's busy CPU, the hosts' (every sshd with its sessions and the commands they reaped) and the site
    workers', every CPU_SAMPLE_S: the reason a start is late is read from where the CPU went while the launches
    ran, on this machine where the hosts and the workers share two CPUs."""

    def __init__(self, stack: SitesStack) -> None:
        super().__init__(name="cpu-meter", daemon=True)
        self.stack = stack
        self.samples: list[tuple[float, float, float, float]] = []  # (monotonic, machine, hosts, workers)
        self._done = threading.Event()
        self._last: dict[str, float] = {}

    def run(self) -> None:
        while True:
            machine = fleet.machine_busy_s()
            hosts = sp.trees_cpu_s([s.process.pid for s in self.stack.sshds])
            for worker in self.stack.site_workers:  # a killed worker keeps what it had used when last seen
                if worker.killed_at is None:
                    self._last[worker.name] = max(self._last.get(worker.name, 0.0), _cpu_s(worker))
            workers = sum(self._last.values())
            self.samples.append((time.monotonic(), machine, hosts, workers))
            if self._done.wait(CPU_SAMPLE_S):
                return

    def stop(self) -> None:
        self._done.set()
        self.join(timeout=30)

    def window(self, start: float, end: float) -> dict[str, float] | None:
        """CPU seconds spent between two monotonic times (the samples nearest inside them), or None."""
        inside = [row for row in self.samples if start <= row[0] <= end]
        if len(inside) < 2:
            return None
        first, last = inside[0], inside[-1]
        wall = last[0] - first[0]
        return {"wall_s": wall, "capacity_s": wall * (os.cpu_count() or 1), "machine_s": last[1] - first[1],
                "hosts_s": last[2] - first[2], "workers_s": last[3] - first[3]}  # fmt: skip


class Kill:
    """At the first look that finds `at_running` runs running, SIGKILL to the site worker whose observer holds the
    most hosts, and what it held noted."""

    def __init__(self, stack: SitesStack, at_running: int) -> None:
        self.stack = stack
        self.at_running = at_running
        self.victim: Worker | None = None
        self.at: float | None = None
        self.running_then = 0
        self.hosts: dict[int, str] = {}  # host -> the token the victim held it under
        self.runs_observed: list[int] = []  # running on those hosts at the kill
        self.runs_in_hand: list[int] = []  # a launch, collection ... begun in the victim and not ended

    def __call__(self, states: list[str]) -> None:
        running = states.count("running")
        if self.at is not None or not self.at_running or running < self.at_running:
            return
        from jobs.models import Host, Run

        tokens = dict(Host.objects.exclude(observer_token="").values_list("pk", "observer_token"))
        held = {w.name: {h: t for h, t in adopted_tokens(w) if tokens.get(h) == t} for w in self.stack.site_workers}
        victim = max(self.stack.site_workers, key=lambda w: len(held[w.name]))
        if not held[victim.name]:
            return  # the running runs' hosts are on their way to an observer: look again
        victim.cpu_s = _cpu_s(victim) - victim.cpu_at_start
        self.at = time.time()
        os.killpg(victim.process.pid, signal.SIGKILL)
        victim.process.wait()
        victim.killed_at, self.victim, self.running_then = self.at, victim, running
        if victim.rss is not None:
            victim.rss.stop()
        self.hosts = held[victim.name]
        say(f"  killed worker {victim.name} (SIGKILL to its process group) with {running} runs running; its "
            f"observer held {len(self.hosts)} hosts")  # fmt: skip
        self.runs_observed = list(
            Run.objects.filter(disk__host_id__in=list(self.hosts), state=Run.State.RUNNING).values_list("pk", flat=True)
        )
        self.runs_in_hand = sorted(runs_in_hand(victim) - set(self.runs_observed))

    def recovery(self, rows: list[sp.RunRow]) -> dict[str, Any]:
        """From the kill until a live worker took each run it held again, and until the last of them was stored.
        The runs it held: those running on its hosts at the kill, those in its tasks, and those that started on
        its hosts after the kill but before a live worker took the host (nobody looked at them either)."""
        from jobs.models import Run

        if not self.at_running:
            return {}
        if self.at is None or self.victim is None:
            return {"worker": None}
        alive = [w for w in self.stack.site_workers if w is not self.victim]
        hosts_taken, runs_taken = taken_again(alive, self.at)
        since = datetime.fromtimestamp(self.at, UTC)
        later = Run.objects.filter(disk__host_id__in=list(self.hosts), started_at__gte=since)
        started_unwatched = [run_id for run_id, host, started in later.values_list("pk", "disk__host_id", "started_at")
                             if started.timestamp() < hosts_taken.get(host, float("inf"))
                             and run_id not in self.runs_observed and run_id not in self.runs_in_hand]  # fmt: skip
        held = set(self.runs_observed) | set(self.runs_in_hand) | set(started_unwatched)
        host_of = dict(Run.objects.filter(pk__in=held).values_list("pk", "disk__host_id"))
        by_id = {row.run_id: row for row in rows}
        taken, stored, after_end = [], [], []
        for run_id in held:
            moments = [m for m in (hosts_taken.get(host_of[run_id]), runs_taken.get(run_id)) if m is not None]
            if moments:
                taken.append(min(moments) - self.at)
            row = by_id.get(run_id)
            if row is not None and row.state in Run.FINAL_STATES and row.finished_at is not None:
                stored.append(row.finished_at - self.at)
                if row.tool_end is not None:
                    after_end.append(row.finished_at - row.tool_end)
        return {
            "worker": self.victim.name,
            "running_at_kill": self.running_then,
            "hosts_held": len(self.hosts),
            "runs_observed": len(self.runs_observed),
            "runs_in_hand": len(self.runs_in_hand),
            "started_unwatched": len(started_unwatched),
            "taken_again_s": max(taken, default=None) if len(taken) == len(held) else None,
            "taken_again_p50_s": sp.percentiles(taken)["p50"],
            "not_taken_again": len(held) - len(taken),
            "stored_s": max(stored, default=None) if len(stored) == len(held) else None,
            "stored_after_end": sp.percentiles(after_end),
            "stored": len(stored),
            "held": len(held),
        }


def _cpu_s(worker: Worker) -> float:
    import psutil

    with contextlib.suppress(psutil.Error):
        return sp.tree_cpu_s(psutil.Process(worker.process.pid))
    return 0.0


# ----------------------------------------------------------------------------------------- the measurement


def logins_by_worker(stack: SitesStack) -> dict[str, dict[str, int]]:
    """Each site worker's logins by host name, from its log (a line per session it opens, jobs/hosts/connecting)."""
    return {w.name: _count(_LOGGED_IN.findall(w.log.read_text(errors="replace"))) for w in stack.site_workers}


def _count(pairs: list[tuple[str, str]]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for host, _site in pairs:
        counts[host] = counts.get(host, 0) + 1
    return counts


def measure(args: argparse.Namespace, stack: SitesStack) -> dict[str, Any]:
    configure_django(stack, args.db, args.database_url)
    say("building the fio stand-in ...")
    bin_dir = build.build(stack.tmp / "standin")
    sites = [(f"s{k + 1}", f"bw{os.getpid()}s{k + 1}") for k in range(args.sites)]
    for _, namespace in sites:
        add_namespace(stack, namespace)
    sshds = -(-args.hosts // args.sites // args.hosts_per_sshd) * args.sites
    say(f"starting redis, about {sshds} sshd for {args.hosts} hosts on {args.sites} sites (network namespaces "
        f"{', '.join(n for _, n in sites)}), {args.disks} disks each ...")  # fmt: skip
    start_redis(stack)
    private_key, public_key = fleet.client_key(stack)
    credential = fleet.fleet_credential(private_key)
    hosts, site_of = [], {}
    for k, (site, namespace) in enumerate(sites):
        numbers = range(k * args.hosts // args.sites, (k + 1) * args.hosts // args.sites)
        with in_namespace(namespace):
            started = fleet.start_fleet_sshds(stack, numbers, args.hosts_per_sshd, bin_dir, public_key)
        made = fleet.fleet_hosts(stack, credential, numbers, started, args.hosts_per_sshd, site=site)
        hosts += made
        site_of.update({host.name: site for host in made})
    firsts = {site: next(h for h in hosts if site_of[h.name] == site) for site, _ in sites}
    reach = [{"from": own, "to": site, "open": reaches(namespace, firsts[site])}
             for own, namespace in sites for site, _ in sites]  # fmt: skip
    if not all(r["open"] for r in reach if r["from"] == r["to"]):
        raise BenchError(f"a site's namespace does not reach its own hosts: {reach}")
    disks = fanout.make_disks(stack, hosts, [args.disks] * args.hosts)
    targets = args.hosts * args.runs_per_host
    fires = fanout.plan_fires(targets, args.hosts, args.spread)
    profile = fleet.make_profile(credential.team, args.runtime)
    say(f"starting {args.workers_per_site} workers a site, each in its site's namespace, and the default queue's ...")
    start_workers(stack, sites, args.workers_per_site, args.concurrency)
    offsets = [sshd.log_path.stat().st_size for sshd in stack.sshds]
    sp.start_beat(stack)
    schedules = fanout.make_schedules(credential.team, disks, profile, fires, args.lead)
    for worker in stack.site_workers:
        worker.cpu_at_start = _cpu_s(worker)
        worker.rss = fleet.RssMeter(worker.process.pid)
        worker.rss.start()
    kill = Kill(stack, args.kill_worker_at_active)
    fire_at = min(s.next_fire_at for s in schedules)
    meter = CpuMeter(stack)
    meter.start()
    first_fire = time.monotonic() + (fire_at - datetime.now(UTC)).total_seconds()
    timeout = args.timeout or args.lead + args.spread + args.runtime + 180
    say(f"{len(schedules)} schedules fire {targets} runs on {args.hosts} hosts from {fire_at:%H:%M:%S} UTC over "
        f"{args.spread:g} s; waiting up to {timeout:g} s for all of them to be final")  # fmt: skip
    done = sp.wait_for_runs(schedules, targets, time.monotonic() + timeout, kill)
    meter.stop()
    from jobs.runs.states import CLAIM_LEAD

    # Launches go out from a claim lead before each start (the wrapper waits for it), collections at each end.
    lead = CLAIM_LEAD.total_seconds()
    cpu = {
        "launches": meter.window(first_fire - lead, first_fire + args.spread + 1),
        "ends": meter.window(first_fire + args.runtime, first_fire + args.runtime + args.spread + 1),
        "all": meter.window(float("-inf"), float("inf")),
    }
    for worker in stack.site_workers:
        if worker.killed_at is None:
            worker.cpu_s = _cpu_s(worker) - worker.cpu_at_start
        if worker.rss is not None:
            worker.rss.stop()
    time.sleep(1.5)  # the last tasks' end lines
    rows = sp.collect(schedules, sp.Trace())
    by_address = fleet.logins_by_address(stack, offsets)
    sshd_logins = {host.name: by_address.get(host.address, 0) for host in hosts}
    config = {
        "db": args.db, "sites": args.sites, "workers_per_site": args.workers_per_site, "hosts": args.hosts,
        "sshds": len(stack.sshds), "disks_per_host": args.disks, "runs_per_host": args.runs_per_host,
        "targets": targets, "spread_s": args.spread, "runtime_s": args.runtime, "concurrency": args.concurrency,
        "lead_s": args.lead, "timeout_s": timeout, "fire_at": fire_at.isoformat(), "schedules": len(schedules),
        "kill_at_running": args.kill_worker_at_active, "cpus": os.cpu_count(), "all_final": done,
        "database": server_version(), "code": code_version(),
    }  # fmt: skip
    workers = [{
        "name": w.name, "site": w.site, "killed": w.killed_at is not None, "cpu_s": w.cpu_s,
        "rss_peak_mb": max((b / fleet.MB for _, b, _ in w.rss.samples), default=0.0) if w.rss else 0.0,
    } for w in stack.site_workers]  # fmt: skip
    return {
        "config": config,
        "rows": rows,
        "reach": reach,
        "site_of": site_of,
        "workers": workers,
        "worker_logins": logins_by_worker(stack),
        "sshd_logins": sshd_logins,
        "kill": kill.recovery(rows),
        "cpu": cpu,
        "tasks": task_costs(stack.site_workers),
        **fleet.count_runs(stack, sp.runs_of(schedules)),
        "worker_log_tail": "" if done else stack.site_workers[-1].log.read_text(errors="replace")[-4000:],
    }


# ----------------------------------------------------------------------------------------- the figures


def summarise(result: dict[str, Any]) -> dict[str, Any]:
    rows: list[sp.RunRow] = result["rows"]
    n = result["config"]["targets"]
    late = sp.percentiles([r.started_at - r.not_before for r in rows if r.started_at is not None])
    stored = sp.percentiles([r.finished_at - r.tool_end for r in rows if r.finished_at and r.tool_end])
    site_of = result["site_of"]
    workers = {w["name"]: w for w in result["workers"]}
    for name, logins in result["worker_logins"].items():
        workers[name]["logins"] = sum(logins.values())
        workers[name]["logins_max"] = max(logins.values(), default=0)
        workers[name]["hosts"] = len(logins)
        site = workers[name]["site"]
        workers[name]["other_site_logins"] = sum(c for h, c in logins.items() if site_of.get(h) != site)
    by_host: dict[str, int] = {}
    for logins in result["worker_logins"].values():
        for host, count in logins.items():
            by_host[host] = by_host.get(host, 0) + count
    sshd_agrees = all(by_host.get(host, 0) == count for host, count in result["sshd_logins"].items())
    crossing = [r for r in result["reach"] if r["open"] and r["from"] != r["to"]]
    kill = result["kill"]
    succeeded = sum(r.state == "succeeded" for r in rows)
    verdict = {
        "runs": len(rows) == n and succeeded == n and result["collected"] == n and result["as_recorded"] == n
        and result["runs_per_disk_max"] == 1 and result["started_once"] == n,
        "late_p95": late["n"] == n and late["p95"] <= fleet.TARGET_LATE_P95_S,
        "late_max": late["n"] == n and late["max"] <= fleet.TARGET_LATE_MAX_S,
        "stored_p95": stored["n"] == n and stored["p95"] <= fleet.TARGET_STORED_P95_S,
        "rss": max(w["rss_peak_mb"] for w in workers.values()) <= fleet.TARGET_RSS_MB,
        "logins": max(w["logins_max"] for w in workers.values()) <= fleet.TARGET_LOGINS_PER_HOST and sshd_agrees,
        "sites": not crossing and not any(w["other_site_logins"] for w in workers.values()),
        "recovered": not kill or (kill.get("taken_again_s") is not None and kill.get("stored_s") is not None),
    }  # fmt: skip
    verdict["all"] = all(verdict.values())
    return {
        "made": len(rows),
        "succeeded": succeeded,
        "start_lateness": late,
        "stored_after_end": stored,
        "workers": list(workers.values()),
        "sshd_agrees": sshd_agrees,
        "crossing": crossing,
        "verdict": verdict,
    }


def print_report(result: dict[str, Any], s: dict[str, Any]) -> None:
    c, _f = result["config"], fmt
    print(f"{c['hosts']} loopback hosts on {c['sites']} sites (a network namespace each) on {c['sshds']} sshd, "
          f"{c['disks_per_host']} directory disks each; {c['runs_per_host']} runs per host = {c['targets']} runs of "
          f"{c['runtime_s']} s, starts spread over {c['spread_s']:g} s by {c['schedules']} schedules from "
          f"{c['fire_at']}")  # fmt: skip
    print(f"workers: {c['workers_per_site']} a site (-Q site.<name>, --pool threads --concurrency {c['concurrency']}, "
          f"traced, in the site's namespace) and one for the default queue; one beat; database {c['database']}; "
          f"{c['cpus']} CPUs; code: {c['code']}")  # fmt: skip
    print("TCP from a site's namespace to a host's sshd: " + ", ".join(
        f"{r['from']} -> {r['to']} {'open' if r['open'] else 'fails'}" for r in result["reach"]))  # fmt: skip
    print(f"\n{'seconds':<52}{'n':>5}{'p50':>8}{'p95':>8}{'max':>8}")
    for label, p in (("start lateness: started_at - not_before", s["start_lateness"]),
                     ("result stored: finished_at - stand-in end (host)", s["stored_after_end"])):  # fmt: skip
        print(f"{label:<52}{p['n']:>5}{_f(p['p50'], 2):>8}{_f(p['p95'], 2):>8}{_f(p['max'], 2):>8}")
    print(f"\n{'worker':<10}{'site':<6}{'RSS peak MB':>12}{'CPU s':>9}{'logins':>8}{'hosts':>7}{'most/host':>10}"
          f"{'other site':>11}")  # fmt: skip
    for w in s["workers"]:
        print(f"{w['name']:<10}{w['site']:<6}{w['rss_peak_mb']:>12.0f}{_f(w['cpu_s'], 1):>9}{w['logins']:>8}"
              f"{w['hosts']:>7}{w['logins_max']:>10}{w['other_site_logins']:>11}"
              + ("  killed" if w["killed"] else ""))  # fmt: skip
    print(f"\nCPU seconds (every {CPU_SAMPLE_S:g} s; hosts: every sshd with its sessions and the commands they ran)")
    print(f"{'window':<44}{'wall s':>8}{'capacity':>10}{'machine':>9}{'hosts':>8}{'workers':>9}")
    for name, label in (("launches", "the launches (claim lead before each start)"), ("ends", "the ends (collections)"),
                        ("all", "all")):  # fmt: skip
        if w := result["cpu"].get(name):
            print(f"{label:<44}{w['wall_s']:>8.0f}{w['capacity_s']:>10.0f}{w['machine_s']:>9.0f}{w['hosts_s']:>8.0f}"
                  f"{w['workers_s']:>9.0f}")  # fmt: skip
    print(f"\n{'task (site workers)':<28}{'n':>6}{'wall p50':>10}{'wall p95':>10}{'CPU s':>9}{'CPU s each':>12}")
    for t in result.get("tasks", []):
        print(f"{t['task']:<28}{t['n']:>6}{_f(t['wall']['p50'], 3):>10}{_f(t['wall']['p95'], 3):>10}"
              f"{t['cpu_s']:>9.1f}{t['cpu_per_task_s']:>12.4f}")  # fmt: skip
    print(
        f"the sshd logs count {sum(result['sshd_logins'].values())} logins, "
        f"{'the same per host as the workers logged' if s['sshd_agrees'] else 'NOT what the workers logged'}"
    )
    k = result["kill"]
    if k and k["worker"] is None:
        print(f"\nno worker was killed: {c['kill_at_running']} runs were never running while a worker held a host")
    elif k:
        late = k["stored_after_end"]
        print(f"\nkill -9 of worker {k['worker']} with {k['running_at_kill']} runs running: its observer held "
              f"{k['hosts_held']} hosts with {k['runs_observed']} runs running, {k['runs_in_hand']} more runs were in "
              f"its tasks, and {k['started_unwatched']} started on those hosts before a live worker took them: "
              f"{k['held']} runs, taken again by a live worker {_f(k['taken_again_s'], 1)} s after the kill (p50 "
              f"{_f(k['taken_again_p50_s'], 1)} s, {k['not_taken_again']} never); the last of them stored "
              f"{_f(k['stored_s'], 1)} s after the kill ({k['stored']}/{k['held']} stored; stored after their end "
              f"p50 {_f(late['p50'], 2)} s, max {_f(late['max'], 2)} s)")  # fmt: skip
    print(f"runs: {s['made']}/{c['targets']} made, {s['succeeded']} succeeded, {result['collected']} collected, "
          f"{result['as_recorded']} stored with the recording's figures, at most {result['runs_per_disk_max']} run "
          f"per disk; the tool started once for {result['started_once']}, twice or more for "
          f"{result['started_twice_or_more']}, never for {result['never_started']}")  # fmt: skip
    for r in [r for r in result["rows"] if r.state != "succeeded"][:10]:
        print(f"  run {r.run_id} ({r.host} {r.disk}) {r.state}: {r.explanation[:200]}")
    v = s["verdict"]
    print("\ntargets: " + ", ".join(f"{name} {'met' if ok else 'MISSED'}" for name, ok in v.items() if name != "all"))
    print(f"overall: {'all targets met' if v['all'] else 'targets missed'}")
    if result["worker_log_tail"]:
        print("\nthe end of the last site worker's log:\n" + result["worker_log_tail"])


# ----------------------------------------------------------------------------------------- entry point


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sites", type=int, default=2, help="sites, a network namespace each (default 2)")
    parser.add_argument("--workers-per-site", type=int, default=2, help="Celery workers a site (default 2)")
    parser.add_argument("--hosts", type=int, default=200, help="loopback hosts, split evenly (default 200)")
    parser.add_argument("--hosts-per-sshd", type=int, default=fleet.MAX_ADDRESSES_PER_SSHD,
                        help=f"addresses an sshd serves (default, most {fleet.MAX_ADDRESSES_PER_SSHD})")  # fmt: skip
    parser.add_argument("--disks", type=int, default=10, help="directory disks per host (default 10)")
    parser.add_argument("--runs-per-host", type=int, default=10, help="runs on each host, one per disk (default 10)")
    parser.add_argument("--spread", type=float, default=60.0, help="seconds the starts are spread over (default 60)")
    parser.add_argument("--runtime", type=int, default=120, help="each run's runtime in seconds (default 120)")
    parser.add_argument("--concurrency", type=int, default=8, help="threads of each site worker (default 8)")
    parser.add_argument("--lead", type=float, default=40.0,
                        help="seconds from set-up to the first fire (default 40: past the claim lead)")  # fmt: skip
    parser.add_argument("--kill-worker-at-active", type=int, default=0, metavar="N",
                        help="SIGKILL one site worker when N runs are running (default 0: none)")  # fmt: skip
    parser.add_argument("--timeout", type=float, default=0.0,
                        help="seconds to wait for all runs (default lead + spread + runtime + 180)")  # fmt: skip
    parser.add_argument("--tick-seconds", type=float, default=1.0, help="BENCHWEB_TICK_SECONDS for beat (default 1)")
    add_database_options(parser, DEFAULT_PG_URL, choices=DATABASES)
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    add_smoke_option(parser, hosts=4, hosts_per_sshd=2, disks=2, runs_per_host=2, spread=2.0, runtime=3, lead=3.0,
                     concurrency=2, kill_worker_at_active=1)  # fmt: skip
    args = parse_args(parser, argv)
    if min(args.sites, args.workers_per_site, args.hosts_per_sshd, args.disks, args.runs_per_host, args.runtime,
           args.concurrency) < 1 or args.hosts < args.sites:  # fmt: skip
        parser.error("--sites, --workers-per-site, --hosts-per-sshd, --disks, --runs-per-host, --runtime and "
                     "--concurrency must be >= 1, and --hosts >= --sites")  # fmt: skip
    if args.hosts_per_sshd > fleet.MAX_ADDRESSES_PER_SSHD:
        parser.error(f"--hosts-per-sshd: OpenSSH listens on {fleet.MAX_ADDRESSES_PER_SSHD + 1} sockets at most")
    if args.runs_per_host > args.disks or args.lead < 3 or args.spread < 0 or args.kill_worker_at_active < 0:
        parser.error("need --runs-per-host <= --disks, --lead >= 3, --spread >= 0, --kill-worker-at-active >= 0")
    if problem := network_namespaces_problem():
        say(f"fleet_sites: cannot measure here: {problem}")
        return 2
    interrupt_on_signals()
    stack = SitesStack("benchweb-fleet-sites-", args.tick_seconds)

    def work() -> tuple[dict[str, Any], dict[str, Any]]:
        result = measure(args, stack)
        return result, summarise(result)

    status, done = run_guarded("fleet_sites", stack, work)
    if done is None:
        return status
    result, summary = done
    if args.json:
        from dataclasses import asdict

        rows = [asdict(r) for r in result.pop("rows")]
        print(json.dumps({k: v for k, v in result.items() if k != "worker_log_tail"} | {"summary": summary,
                         "runs": rows}, indent=2, default=str))  # fmt: skip
    else:
        print_report(result, summary)
    return verdict_status(args, summary["verdict"]["all"])


if __name__ == "__main__":
    sys.exit(main())
