"""What benchweb's watching of a running run costs the TARGET host (issue 15, "watch without touching").

    .venv/bin/python bench/observer_cost.py [--pairs 8] [--runtime 60] [--runtime-pair 20] [--runs 2] [--json]

Everything runs on this machine in a fresh temporary directory: a migrated SQLite database, an embedded
redis-server, a Celery worker subprocess (4 threads) and a private sshd on 127.0.0.1 (LogLevel VERBOSE) that
plays the target host. The machine is split in two: the target side (the sshd listener, and through inherited
affinity everything it spawns: sessions, shells, commands, the detached wrapper and fio) runs on one CPU, the
benchweb side (this script, the worker, redis, the ssh client) on the others. The benchmark is CPU-bound on
purpose, so that anything the observation does on the target's CPU shows in its IOPS: fio 4k randread, psync,
iodepth=1, numjobs=1, direct=0, time_based, a 16 MiB file in tmpfs (/dev/shm), cpus_allowed=<target CPU>;
benchweb runs it from a Profile with exactly those fields (cpus_allowed through extra_options), by hand it is the
same options on fio's command line. The script uses only benchweb's public entry points (queueing.request_run,
the Run states, the Profile/Disk/Host models), so it measures whatever observation design the code has.

1. SSH per run. Logins ("Accepted publickey"), commands ("Starting session: command") and SFTP sessions
   ("subsystem 'sftp'") in the sshd log, from request_run until the run is final, its run directory is removed
   and the target's sessions are closed (3 s at most: a persistent session may stay open). --runs runs of
   --runtime seconds each; per run and per run-minute (a minute of the profile's fio runtime). Then 3 runs
   (--runtime-pair s each) are requested at once on the same disk, so that each starts as the previous ends,
   and their logins are counted together: a persistent session gives at most 1 for all three.

2. Target CPU of the observation. The sshd listener's process tree is read from /proc (psutil) every 0.2 s and
   at both ends of each run. The CPU of the tree at a moment is

       F = listener (utime + stime + cutime + cstime) + the sum over its live descendants of the same four

   cutime/cstime are the times of the children a process has reaped (which include what those children had
   reaped themselves). Every process that ends inside the tree is reaped by its parent there, so its whole
   life moves, exactly and once, from the live sum into its parent's cutime: F never double counts and never
   misses a process shorter than a sample, and F(end) - F(start) is the tree's CPU over a run. Summing each
   pid's last sampled time as well would count every reaped process twice; summing only that would miss the
   up to 0.2 s each process lives after its last sample and every poll shorter than a sample. The 0.2 s
   samples serve one purpose: checking that the benchmark is not in the tree. (They cannot split the time by
   kind of process either: /proc gives a process's times in 10 ms ticks, and a poll's commands live for
   milliseconds; the report gives CPU per login instead, which is what dominates.) The detached wrapper
   (sh run.sh) and fio leave the tree (setsid, their launching shell exits, init adopts them), so their CPU
   never reaches F. A benchmark process is one whose argv runs run.sh (sh run.sh), or runs fio other than
   `fio --version` (fio, or flock/timeout ... fio ...); a shell whose script merely mentions run.sh or fio,
   `grep -q run.sh` in a poll and the preflight's `fio --version` are the observation's own work and count.
   A benchmark process is never added to the live sum, and if one ends inside the tree (so that its time
   reaches its parent's cutime) its last sampled time is subtracted and the report says the CPU figure is
   inexact. F is read again until the set of pids is the same before and after the reading (no process was
   reaped or forked meanwhile).

   The same job run by hand over plain ssh is the comparison: one login, one command
   (`cd DIR && setsid fio ... </dev/null &`), and ssh waits for fio's end because fio holds the session's
   stdout open until it exits; the only difference to `ssh host fio ...` is that fio is not sshd's child, so
   its own CPU (about all of a CPU for the runtime) is not in the tree. Observation cost per run-minute =
   (benchweb's tree CPU - the by-hand tree CPU) / runtime minutes, medians over --runs runs of each. Nothing
   is subtracted that is not sshd-side: both figures are the same tree measured the same way.

3. IOPS with benchweb watching / without. --pairs pairs, alternating which goes first (AB BA AB ...); each
   half runs the job for --runtime-pair s. "without": started detached by hand
   (`ssh host 'cd DIR && setsid sh -c "fio ... --output=FILE; echo $? >FILE.status" </dev/null >/dev/null 2>&1 &'`),
   then nothing until runtime + 1 s, then one ssh that waits for the status file and reads the result.
   "with": request_run and the Run row read from the database every 0.25 s until final (the database is
   this machine's, on the benchweb side). IOPS are fio's own (read.iops of the last JSON document) in both.
   Reported: each pair's ratio, the median, how many pairs are below 1, and the noise floor (the spread of the
   "without" runs among themselves). benchweb's fio also writes a status document every second, which the
   by-hand run does not: that is part of watching too; --without-status-interval 1 gives the by-hand run the
   same, to tell the two apart. The 0.2 s sampler is off during the pairs (it reads every process's
   /proc entry, fio's included); the pairs' tree CPU is taken at their ends only (no benchmark check).

Targets (issue 15): logins per run <= 1 per host per worker (each measured run, and the 3 back-to-back runs
together); target CPU of the observation <= 0.2 s per run-minute; median IOPS ratio >= 0.995.
Exit status: 0 all targets met, 1 a target missed, 2 the measurement failed, 130 interrupted. Whatever
happens, every process started here (the plain fio runs too) is stopped and the temporary directories
(one in /tmp, one in /dev/shm) are removed.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import benchkit
from benchkit import (
    BenchError,
    add_smoke_option,
    code_version,
    configure_django,
    fmt,
    interrupt_on_signals,
    login_user,
    loopback_host,
    parse_args,
    run_guarded,
    say,
    sshd_counts,
    start_redis,
    start_sshd,
    start_worker,
    verdict_status,
    worker_options,
)

LOGINS_TARGET = 1
CPU_PER_RUN_MINUTE_TARGET_S = 0.2
IOPS_RATIO_TARGET = 0.995
FILE_SIZE = 16 * 2**20
SAMPLE_S = 0.2
DB_POLL_S = 0.25
QUIET_WAIT_S = 3.0
BACK_TO_BACK = 3
WARMUP_RUNTIME_S = 3
# Beyond the fio runtime: connecting, laying out 16 MiB in tmpfs, collecting. Far more than a healthy run needs.
RUN_SLACK_S = 120
SHELLS = frozenset({"sh", "bash", "dash", "ash", "ksh", "zsh", "busybox"})


class Stack(benchkit.Stack):
    """benchkit's stack, plus the tmpfs directory the benchmark reads and the directory of the by-hand runs,
    whose detached fio processes close() stops as benchkit stops benchweb's."""

    def __init__(self, prefix: str, shm_base: Path) -> None:
        super().__init__(prefix)
        self.shm = Path(tempfile.mkdtemp(prefix=prefix, dir=shm_base))
        self.plain_dir = self.tmp / "plain"

    def close(self) -> None:
        _kill_working_in(self.plain_dir)
        super().close()
        shutil.rmtree(self.shm, ignore_errors=True)


def _kill_working_in(directory: Path) -> None:
    import psutil

    for process in psutil.process_iter():
        with contextlib.suppress(psutil.Error, OSError):
            if process.pid != os.getpid() and process.cwd().startswith(str(directory)):
                process.kill()


# ----------------------------------------------------------------------------------------- the target's CPU


def is_benchmark(argv: list[str]) -> bool:
    """Whether a process is the benchmark itself: the wrapper (sh run.sh) or fio running a job, also under
    flock/timeout. A shell whose -c script mentions them, `grep -q run.sh` and `fio --version` are not."""
    names = [os.path.basename(arg) for arg in argv]
    if not names:
        return False
    if names[0] == "run.sh" or (names[0] in SHELLS and len(names) > 1 and names[1] == "run.sh"):
        return True
    if "fio" in names:
        return argv[names.index("fio") + 1 :] != ["--version"]
    return False


@dataclass
class Seen:
    """One process of the tree (pid and start time), as last sampled."""

    benchmark: bool
    with_children_s: float  # ... + cutime + cstime
    parent_benchmark: bool


@dataclass
class Mark:
    """The tree at one moment: F (see the module docstring), and the benchmark's time that reached it."""

    tree_s: float
    benchmark_inside_s: float


class TreeMeter:
    """The CPU of the sshd listener's process tree, without the benchmark (see the module docstring)."""

    def __init__(self, listener_pid: int) -> None:
        import psutil

        self.listener = psutil.Process(listener_pid)
        self.seen: dict[tuple[int, float], Seen] = {}
        self.benchmark_inside_s = 0.0  # benchmark processes that ended inside the tree: their time reached F
        self.benchmark_ended_inside: list[str] = []
        self.benchmark_in_tree: set[str] = set()  # argv of benchmark processes ever seen in the tree
        self._in_tree: set[tuple[int, float]] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.samples = 0

    def start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="tree-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._thread = None

    def _loop(self) -> None:
        import psutil

        while not self._stop.wait(SAMPLE_S):
            try:
                with self._lock:
                    self._scan()
            except (BenchError, psutil.Error):
                return  # the sshd is gone: an interrupted run is being cleaned up, or mark() will say so
            self.samples += 1

    def descendants(self) -> list[Any]:
        import psutil

        try:
            return self.listener.children(recursive=True)
        except psutil.NoSuchProcess as exc:
            raise BenchError("the private sshd exited during the measurement") from exc

    def _scan(self) -> tuple[float, set[int]]:
        """Update every live descendant's times; return the live sum of F and the pids listed at the start."""
        import psutil

        processes = self.descendants()
        live_s, keys = 0.0, set()
        for process in processes:
            with contextlib.suppress(psutil.NoSuchProcess):
                with process.oneshot():
                    key = (process.pid, process.create_time())
                    times = process.cpu_times()
                    try:
                        argv = process.cmdline()
                    except psutil.ZombieProcess:
                        argv = []
                    parent = process.ppid()
                known = self.seen.get(key)
                # A forked child execs later under the same pid and start time: once the benchmark, always.
                benchmark = bool(known and known.benchmark) or is_benchmark(argv)
                total = times.user + times.system + times.children_user + times.children_system
                parent_key = next((k for k in self._in_tree | keys if k[0] == parent), None)
                parent_benchmark = bool(parent_key and self.seen[parent_key].benchmark)
                self.seen[key] = Seen(benchmark, total, parent_benchmark)
                keys.add(key)
                if benchmark:
                    self.benchmark_in_tree.add(shlex.join(argv)[:200] or f"pid {process.pid}")
                else:
                    live_s += total
        for key in self._in_tree - keys:
            gone = self.seen[key]
            # Reaped by a parent in the tree that is not itself the benchmark: its time reached F.
            if gone.benchmark and not gone.parent_benchmark and not _alive(key):
                self.benchmark_inside_s += gone.with_children_s
                self.benchmark_ended_inside.append(f"pid {key[0]}")
        self._in_tree = keys
        return live_s, {process.pid for process in processes}

    def mark(self) -> Mark:
        """F now, read until no process was reaped or forked while it was read (at most ~1 s of tries)."""
        with self._lock:
            for _attempt in range(50):
                live_s, listed = self._scan()
                times = self.listener.cpu_times()
                if {process.pid for process in self.descendants()} == listed:
                    break
                time.sleep(0.02)
            listener_s = times.user + times.system + times.children_user + times.children_system
            return Mark(tree_s=listener_s + live_s, benchmark_inside_s=self.benchmark_inside_s)

    def wait_quiet(self, timeout: float = QUIET_WAIT_S) -> None:
        """Until the target has no process left but the benchmark's (a persistent session may stay)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                self._scan()
                if all(self.seen[key].benchmark for key in self._in_tree):
                    return
            time.sleep(0.05)

    def between(self, a: Mark, b: Mark) -> dict[str, Any]:
        """The tree's CPU from a to b without the benchmark; exact unless a benchmark process ended inside it."""
        total = b.tree_s - a.tree_s - (b.benchmark_inside_s - a.benchmark_inside_s)
        return {"cpu_s": total, "exact": b.benchmark_inside_s == a.benchmark_inside_s}


def _alive(key: tuple[int, float]) -> bool:
    import psutil

    try:
        process = psutil.Process(key[0])
        return process.create_time() == key[1] and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


# ----------------------------------------------------------------------------------------- the target and the job


def choose_cpus(target_cpu: int | None) -> tuple[int, set[int]]:
    """(the target's CPU, benchweb's CPUs) from the CPUs this process may use."""
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 2:
        raise BenchError(f"this needs 2 CPUs (one for the target, one for benchweb); it may use only {allowed}")
    target = allowed[0] if target_cpu is None else target_cpu
    if target not in allowed:
        raise BenchError(f"--target-cpu {target} is not one of the CPUs this process may use: {allowed}")
    return target, set(allowed) - {target}


def fs_type(path: Path) -> str:
    """The file system type of the mount holding path (from /proc/mounts)."""
    best, kind = "", "unknown"
    with contextlib.suppress(OSError):
        for line in Path("/proc/mounts").read_text().splitlines():
            mount_point, fs = line.split()[1:3]
            if str(path).startswith(mount_point.rstrip("/") + "/") and len(mount_point) > len(best):
                best, kind = mount_point, fs
    return kind


def fio_options(target: Path, runtime: int, cpu: int) -> dict[str, Any]:
    """The job's options, named as in fio; the profile holds the same (see make_profile)."""
    return {
        "ioengine": "psync", "rw": "randread", "bs": 4096, "iodepth": 1, "direct": 0, "numjobs": 1,
        "runtime": runtime, "time_based": 1, "size": FILE_SIZE, "directory": str(target), "unlink": 1,
        "cpus_allowed": str(cpu),
    }  # fmt: skip


def fio_argv(name: str, options: dict[str, Any], output: Path | None = None) -> list[str]:
    argv = ["fio", f"--name={name}", *(f"--{key}={value}" for key, value in options.items())]
    return [*argv, "--output-format=json", *([f"--output={output}"] if output else [])]


def make_profile(team: Any, name: str, runtime: int, cpu: int) -> Any:
    from jobs.models import Profile

    return Profile.objects.create(
        team=team, name=name, tool="fio", rw="randread", block_size_bytes=4096, iodepth=1, jobs=1,
        runtime_s=runtime, time_based=True, ioengine="psync", direct=False, size_bytes=FILE_SIZE,
        extra_options={"cpus_allowed": str(cpu)},
    )  # fmt: skip


def plain_ssh(stack: Stack) -> list[str]:
    """The ssh command prefix for the by-hand runs: start_sshd's key, the sshd's host key pinned."""
    client = stack.tmp / "client"
    key = stack.sshd.host_key
    known_hosts = client / "known_hosts"
    known_hosts.write_text(f"[127.0.0.1]:{stack.sshd.port} {key.key_type} {key.key_b64}\n")
    return [
        "ssh", "-F", "/dev/null", "-i", str(client / "id_ed25519"), "-p", str(stack.sshd.port),
        "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes",
        "-o", f"UserKnownHostsFile={known_hosts}", "-o", "GlobalKnownHostsFile=/dev/null",
        "-o", "ControlMaster=no", "-o", "ControlPath=none", "-o", "LogLevel=ERROR",
        f"{login_user()}@127.0.0.1",
    ]  # fmt: skip


def ssh_run(ssh: list[str], script: str, timeout: float) -> str:
    done = subprocess.run([*ssh, script], capture_output=True, timeout=timeout)
    if done.returncode != 0:
        raise BenchError(f"ssh {script[:80]!r} exited {done.returncode}: {done.stderr.decode(errors='replace')[-500:]}")
    return done.stdout.decode(errors="replace")


def last_fio_document(text: str) -> dict[str, Any]:
    """The last whole fio JSON document in text (benchweb's output holds one per --status-interval)."""
    decoder = json.JSONDecoder(strict=False)
    last, start = None, text.find('"fio version"')
    while start >= 0:
        brace = text.rfind("{", 0, start)
        with contextlib.suppress(json.JSONDecodeError):
            last = decoder.raw_decode(text, brace)[0]
        start = text.find('"fio version"', start + 1)
    if not isinstance(last, dict) or not last.get("jobs"):
        raise BenchError(f"no fio JSON document in the output: {text[:300]!r}")
    return last


def read_iops(doc: dict[str, Any]) -> float:
    return float(sum(job["read"]["iops"] for job in doc["jobs"]))


def fio_cpu_pct(doc: dict[str, Any]) -> float:
    """How much of a CPU fio's job had (usr + sys, % of its runtime): below ~100, something else ran on it."""
    return float(sum(job["usr_cpu"] + job["sys_cpu"] for job in doc["jobs"]))


# ----------------------------------------------------------------------------------------- one run of each kind


@dataclass
class Measured:
    kind: str  # "benchweb", "by hand, waited" or "by hand, detached"
    runtime_s: int
    wall_s: float
    iops: float | None
    fio_cpu_pct: float | None
    ssh: dict[str, int]
    cpu: dict[str, Any] = field(default_factory=dict)
    run_ids: list[int] = field(default_factory=list)
    count: int = 1  # runs in this window

    @property
    def minutes(self) -> float:
        return self.runtime_s * self.count / 60


class Harness:
    def __init__(self, stack: Stack, meter: TreeMeter, ssh: list[str], disk: Any, target: Path, cpu: int) -> None:
        self.stack, self.meter, self.ssh, self.disk, self.target, self.cpu = stack, meter, ssh, disk, target, cpu
        self.counter = 0
        self.status_interval = 0  # the detached by-hand runs': none, as nothing reads their output meanwhile

    def _window(self, kind: str, runtime: int, work: Any) -> Measured:
        """Run work() between two marks of the tree and two offsets of the sshd log."""
        offset = self.stack.sshd.log_path.stat().st_size
        before = self.meter.mark()
        t0 = time.perf_counter()
        iops, fio_cpu, run_ids = work()
        self.meter.wait_quiet()
        after = self.meter.mark()
        wall = time.perf_counter() - t0
        counts = sshd_counts(self.stack, offset)
        measured = Measured(kind, runtime, wall, iops, fio_cpu, counts, run_ids=run_ids, count=max(1, len(run_ids)))
        measured.cpu = self.meter.between(before, after)
        return measured

    def benchweb(self, profile: Any, count: int = 1) -> Measured:
        """count runs requested at once on the one disk (they run one after the other)."""

        def work() -> tuple[float, float, list[int]]:
            from jobs.runs import queueing

            runs = [queueing.request_run(self.disk, profile) for _ in range(count)]
            for run in runs:
                self._wait_final(run, profile.runtime_s * count)
            docs = [last_fio_document(run.raw_output) for run in runs]
            iops, cpu = statistics.mean(map(read_iops, docs)), statistics.mean(map(fio_cpu_pct, docs))
            return iops, cpu, [run.pk for run in runs]

        return self._window("benchweb", profile.runtime_s, work)

    def _wait_final(self, run: Any, runtime: int) -> None:
        from jobs.models import Run

        deadline = time.monotonic() + runtime + RUN_SLACK_S
        while Run.objects.filter(pk=run.pk).values_list("state", flat=True).get() not in Run.FINAL_STATES:
            if time.monotonic() > deadline:
                raise BenchError(f"benchweb run {run.pk} was not final after {runtime + RUN_SLACK_S} s")
            time.sleep(DB_POLL_S)
        run.refresh_from_db()
        if run.state != Run.State.SUCCEEDED:
            raise BenchError(f"benchweb run {run.pk} ended {run.state}: {run.explanation}")
        # The run's files are removed on the host after it is final: that is part of its cost.
        deadline = time.monotonic() + 15
        while run.remote_dir and Path(run.remote_dir).exists() and time.monotonic() < deadline:
            time.sleep(0.05)

    def _name(self) -> str:
        self.counter += 1
        return f"plain-{self.counter}"

    def by_hand_waited(self, runtime: int) -> Measured:
        """One login, one command, ssh waiting for fio (which holds the session's stdout until it exits)."""

        def work() -> tuple[float, float, list[int]]:
            argv = fio_argv(self._name(), fio_options(self.target, runtime, self.cpu))
            script = f"cd {shlex.quote(str(self.stack.plain_dir))} && setsid {shlex.join(argv)} </dev/null &"
            doc = json.loads(ssh_run(self.ssh, script, runtime + RUN_SLACK_S))
            return read_iops(doc), fio_cpu_pct(doc), []

        return self._window("by hand, waited", runtime, work)

    def by_hand_detached(self, runtime: int) -> Measured:
        """Started detached, left alone until its runtime is over, then its result read once."""

        def work() -> tuple[float, float, list[int]]:
            name = self._name()
            result = self.stack.plain_dir / f"{name}.json"
            status = self.stack.plain_dir / f"{name}.status"
            argv = fio_argv(name, fio_options(self.target, runtime, self.cpu), result)
            if self.status_interval:
                argv.append(f"--status-interval={self.status_interval}")
            inner = f"{shlex.join(argv)}; echo $? >{status}"
            started = time.monotonic()
            ssh_run(self.ssh, f"cd {shlex.quote(str(self.stack.plain_dir))} && "
                              f"setsid sh -c {shlex.quote(inner)} </dev/null >/dev/null 2>&1 &", 30)  # fmt: skip
            time.sleep(max(0.0, started + runtime + 1 - time.monotonic()))
            read = f"while [ ! -e {status} ]; do sleep 0.2; done; cat {status}; echo; cat {result}"
            first, _, rest = ssh_run(self.ssh, read, RUN_SLACK_S).partition("\n")
            if first.strip() != "0":
                raise BenchError(f"the by-hand fio exited {first.strip()}: {rest[-500:]}")
            doc = last_fio_document(rest)
            return read_iops(doc), fio_cpu_pct(doc), []

        return self._window("by hand, detached", runtime, work)


# ----------------------------------------------------------------------------------------- the measurement


def measure(args: argparse.Namespace, stack: Stack) -> dict[str, Any]:
    target_cpu, benchweb_cpus = choose_cpus(args.target_cpu)
    # Everything started from here on (redis, the worker, ssh clients) inherits benchweb's CPUs.
    os.sched_setaffinity(0, benchweb_cpus)
    configure_django(stack, "sqlite", "")
    start_redis(stack)
    start_worker(stack, [sys.executable, "-m", "celery", "-A", "benchweb", "worker", *worker_options(4, "observer")])
    private_key = start_sshd(stack)
    # The target host's side: the listener, and so every session, shell, command, wrapper and fio it spawns.
    os.sched_setaffinity(stack.sshd.process.pid, {target_cpu})
    stack.plain_dir.mkdir()
    target = stack.shm / "target"
    target.mkdir()
    ssh = plain_ssh(stack)
    ssh_run(ssh, "true", 30)

    from jobs.models import Disk

    host = loopback_host(stack, private_key, "observer cost bench")
    disk = Disk.objects.create(host=host, label="tmpfs", target_path=str(target), disk_type="custom")
    profiles = {
        runtime: make_profile(host.team, f"cpu-bound 4k randread {runtime} s", runtime, target_cpu)
        for runtime in {WARMUP_RUNTIME_S, args.runtime, args.runtime_pair}
    }
    meter = TreeMeter(stack.sshd.process.pid)
    load_before = os.getloadavg()
    h = Harness(stack, meter, ssh, disk, target, target_cpu)
    h.status_interval = args.without_status_interval

    meter.start()
    say("warming up: one short run of each kind")
    warm = [h.benchweb(profiles[WARMUP_RUNTIME_S]), h.by_hand_waited(WARMUP_RUNTIME_S)]
    runs: list[Measured] = []
    for number in range(1, args.runs + 1):
        order = ("benchweb", "by hand") if number % 2 else ("by hand", "benchweb")
        for kind in order:
            done = h.benchweb(profiles[args.runtime]) if kind == "benchweb" else h.by_hand_waited(args.runtime)
            say(f"run {number}/{args.runs} {kind}: {done.ssh['logins']} logins, target CPU {done.cpu['cpu_s']:.3f} s")
            runs.append(done)
    say(f"{BACK_TO_BACK} benchweb runs of {args.runtime_pair} s back to back")
    back_to_back = h.benchweb(profiles[args.runtime_pair], BACK_TO_BACK)
    meter.stop()

    pairs = []
    for number in range(1, args.pairs + 1):
        order = ("without", "with") if number % 2 else ("with", "without")
        done = {}
        for kind in order:
            if kind == "with":
                done[kind] = h.benchweb(profiles[args.runtime_pair])
            else:
                done[kind] = h.by_hand_detached(args.runtime_pair)
        ratio = done["with"].iops / done["without"].iops
        say(f"pair {number}/{args.pairs} ({', '.join(order)}): without {done['without'].iops:.0f} IOPS, "
            f"with {done['with'].iops:.0f} IOPS, ratio {ratio:.4f}")  # fmt: skip
        pairs.append({"pair": number, "order": list(order), "ratio": ratio, **{k: asdict(v) for k, v in done.items()}})

    facts = {"target_cpu": target_cpu, "benchweb_cpus": benchweb_cpus, "target": target, "port": stack.sshd.port,
             "load_before": load_before, "load_after": os.getloadavg(), "samples": meter.samples,
             "benchmark_in_tree": sorted(meter.benchmark_in_tree),
             "benchmark_ended_inside": meter.benchmark_ended_inside}  # fmt: skip
    return summarise(args, facts, warm, runs, back_to_back, pairs)


def summarise(args: argparse.Namespace, m: dict[str, Any], warm: list[Measured], runs: list[Measured],
              back_to_back: Measured, pairs: list[dict[str, Any]]) -> dict[str, Any]:  # fmt: skip
    bw = [r for r in runs if r.kind == "benchweb"]
    hand = [r for r in runs if r.kind != "benchweb"]
    minutes = args.runtime / 60
    bw_cpu = statistics.median(r.cpu["cpu_s"] for r in bw)
    hand_cpu = statistics.median(r.cpu["cpu_s"] for r in hand)
    observation_per_min = (bw_cpu - hand_cpu) / minutes
    logins = [r.ssh["logins"] for r in bw]
    ratios = [p["ratio"] for p in pairs]
    without = [p["without"]["iops"] for p in pairs]
    without_median = statistics.median(without)
    chronological = [p["without"]["iops"] for p in pairs]
    successive = [abs(b - a) / a * 100 for a, b in itertools.pairwise(chronological)]
    exact = all(r.cpu["exact"] for r in [*runs, back_to_back])
    median_ratio = statistics.median(ratios)
    return {
        "config": {
            "code": code_version(),
            "runs": args.runs,
            "runtime_s": args.runtime,
            "runtime_pair_s": args.runtime_pair,
            "pairs": args.pairs,
            "without_status_interval": args.without_status_interval,
            "job": {k: v for k, v in fio_options(Path("TMPFS"), 0, m["target_cpu"]).items() if k != "runtime"},
            "target_dir": str(m["target"]),
            "target_fs": fs_type(m["target"]),
            "target_cpu": m["target_cpu"],
            "benchweb_cpus": sorted(m["benchweb_cpus"]),
            "cpus": os.cpu_count(),
            "load_before": m["load_before"],
            "load_after": m["load_after"],
            "sampler_samples": m["samples"],
            "by_hand_waited": f"ssh -p {m['port']} {login_user()}@127.0.0.1 'cd DIR && setsid fio ... </dev/null &'",
        },
        "warmup": [asdict(r) for r in warm],
        "runs": [asdict(r) | {"per_run_minute": _per_minute(r)} for r in runs],
        "back_to_back": asdict(back_to_back) | {"per_run_minute": _per_minute(back_to_back)},
        "pairs": pairs,
        "ssh": {
            "logins_per_run_median": statistics.median(logins),
            "logins_per_run_max": max(logins),
            "logins_per_run_minute": statistics.median(logins) / minutes,
            "commands_per_run_median": statistics.median(r.ssh["commands"] for r in bw),
            "sftp_per_run_median": statistics.median(r.ssh["sftp sessions"] for r in bw),
            "by_hand_logins": [r.ssh["logins"] for r in hand],
            "back_to_back_logins": back_to_back.ssh["logins"],
        },
        "cpu": {
            "benchweb_s_median": bw_cpu,
            "by_hand_s_median": hand_cpu,
            "benchweb_per_run_minute": bw_cpu / minutes,
            "by_hand_per_run_minute": hand_cpu / minutes,
            "observation_per_run_minute": observation_per_min,
            "exact": exact,
            "benchmark_processes_seen_in_tree": m["benchmark_in_tree"],
            "benchmark_processes_ended_in_tree": m["benchmark_ended_inside"],
        },
        "iops": {
            "median_ratio": median_ratio,
            "pairs_below_1": sum(r < 1 for r in ratios),
            "without_median": without_median,
            "with_median": statistics.median(p["with"]["iops"] for p in pairs),
            "without_cv_pct": _cv(without),
            "without_range_pct": (max(without) - min(without)) / without_median * 100,
            "without_successive_abs_diff_pct_median": statistics.median(successive) if successive else None,
        },
        "verdict": {
            "logins_per_run": max(logins) <= LOGINS_TARGET,
            "logins_back_to_back": back_to_back.ssh["logins"] <= LOGINS_TARGET,
            "cpu": observation_per_min <= CPU_PER_RUN_MINUTE_TARGET_S,
            "iops": median_ratio >= IOPS_RATIO_TARGET,
        },
    }


def _per_minute(r: Measured) -> dict[str, float]:
    return {"logins": r.ssh["logins"] / r.minutes, "cpu_s": r.cpu["cpu_s"] / r.minutes}


def _cv(values: list[float]) -> float | None:
    return statistics.stdev(values) / statistics.mean(values) * 100 if len(values) > 1 else None


# ----------------------------------------------------------------------------------------- output


def print_report(result: dict[str, Any]) -> None:
    c, s, cpu, io, v = result["config"], result["ssh"], result["cpu"], result["iops"], result["verdict"]
    print("observer cost: what benchweb's watching of a running run costs the target host (issue 15)")
    print(f"code: {c['code']}; machine: {c['cpus']} CPUs; target side (private sshd on 127.0.0.1, its sessions, "
          f"fio) pinned to CPU {c['target_cpu']}, benchweb (worker, redis, this script, ssh client) to CPU "
          f"{','.join(map(str, c['benchweb_cpus']))}")  # fmt: skip
    print(f"load average (1/5/15 min): before {_load(c['load_before'])}, after {_load(c['load_after'])}")
    job = ", ".join(f"{k}={v}" for k, v in c["job"].items() if k != "directory")
    print(f"job: fio {job}, in {c['target_dir']} ({c['target_fs']})\n")

    print("1. SSH per run: sshd log (LogLevel VERBOSE) from request_run until the run is final, its files removed "
          "and the target's sessions closed; run-minute = a minute of fio runtime")  # fmt: skip
    print(f"   {'run':<26} {'fio s':>6} {'wall s':>7} {'logins':>7} {'commands':>9} {'sftp':>5} "
          f"{'logins/run-min':>15}")  # fmt: skip
    for i, r in enumerate(result["runs"], 1):
        print(f"   {_label(i, r):<26} {r['runtime_s']:>6} {r['wall_s']:>7.1f} "
              f"{r['ssh']['logins']:>7} {r['ssh']['commands']:>9} {r['ssh']['sftp sessions']:>5} "
              f"{r['per_run_minute']['logins']:>15.1f}")  # fmt: skip
    b = result["back_to_back"]
    print(f"   {f'{BACK_TO_BACK} benchweb back to back':<26} {b['runtime_s']:>4}x{BACK_TO_BACK} {b['wall_s']:>7.1f} "
          f"{b['ssh']['logins']:>7} {b['ssh']['commands']:>9} {b['ssh']['sftp sessions']:>5} "
          f"{b['per_run_minute']['logins']:>15.1f}")  # fmt: skip
    print(f"   benchweb, median per run: {fmt(s['logins_per_run_median'], 1)} logins "
          f"({s['logins_per_run_minute']:.1f} per run-minute), {fmt(s['commands_per_run_median'], 1)} commands, "
          f"{fmt(s['sftp_per_run_median'], 1)} SFTP sessions; by hand: {s['by_hand_logins']} logins\n")  # fmt: skip

    print("2. Target CPU: utime+stime of the private sshd's process tree (listener + cutime/cstime of reaped "
          "children + live descendants), benchmark processes excluded; read at both ends of each run; the tree "
          f"checked for the benchmark every {SAMPLE_S} s ({c['sampler_samples']} samples)")  # fmt: skip
    print(f"   {'run':<26} {'CPU s':>7} {'s/run-min':>10} {'s/login':>8}")
    for i, r in enumerate([*result["runs"], b], 1):
        label = f"{BACK_TO_BACK} benchweb back to back" if r is b else _label(i, r)
        per_login = r["cpu"]["cpu_s"] / r["ssh"]["logins"] if r["ssh"]["logins"] else None
        print(f"   {label:<26} {r['cpu']['cpu_s']:>7.3f} {r['per_run_minute']['cpu_s']:>10.3f} "
              f"{fmt(per_login, 3):>8}")  # fmt: skip
    print(f"   median per run-minute: benchweb {cpu['benchweb_per_run_minute']:.3f} s, by hand "
          f"{cpu['by_hand_per_run_minute']:.3f} s; observation = the difference: "
          f"{cpu['observation_per_run_minute']:.3f} s per run-minute")  # fmt: skip
    seen = cpu["benchmark_processes_seen_in_tree"]
    print(f"   benchmark processes seen in sshd's tree: {len(seen)}"
          + (f" ({'; '.join(seen[:3])}{' ...' if len(seen) > 3 else ''})" if seen else "")
          + (f"; ENDED INSIDE it (subtracted, inexact): {cpu['benchmark_processes_ended_in_tree']}"
             if not cpu["exact"] else "; none ended inside it (none counted)") + "\n")  # fmt: skip

    print(f"3. IOPS with benchweb watching / without (detached by hand, read once at the end), "
          f"{c['runtime_pair_s']} s each, alternated")  # fmt: skip
    print(f"   {'pair':>4}  {'order':<13} {'without IOPS':>13} {'with IOPS':>11} {'ratio':>8}  {'fio CPU% w/o':>12} "
          f"{'with':>6}  {'logins w/o':>10} {'with':>5}  {'sshd CPU s w/o':>14} {'with':>6}")  # fmt: skip
    for p in result["pairs"]:
        w, o = p["with"], p["without"]
        print(f"   {p['pair']:>4}  {','.join(p['order']):<13} {o['iops']:>13.0f} {w['iops']:>11.0f} "
              f"{p['ratio']:>8.4f}  {o['fio_cpu_pct']:>12.1f} {w['fio_cpu_pct']:>6.1f}  "
              f"{o['ssh']['logins']:>10} {w['ssh']['logins']:>5}  "
              f"{o['cpu']['cpu_s']:>14.3f} {w['cpu']['cpu_s']:>6.3f}")  # fmt: skip
    print(f"   median ratio {io['median_ratio']:.4f}; {io['pairs_below_1']}/{len(result['pairs'])} pairs below 1; "
          f"median IOPS without {io['without_median']:.0f}, with {io['with_median']:.0f}")  # fmt: skip
    print(f"   noise floor of the 'without' runs among themselves: CV {fmt(io['without_cv_pct'], 2, 'n/a')} %, "
          f"range {io['without_range_pct']:.2f} % of their median, successive runs differ by "
          f"{fmt(io['without_successive_abs_diff_pct_median'], 2, 'n/a')} % (median)\n")  # fmt: skip

    print(f"   {'target (issue 15)':<52} {'measured':>10} {'target':>9}  verdict")
    rows = [
        ("SSH logins per run, per host, per worker (max)", f"{s['logins_per_run_max']}", f"<= {LOGINS_TARGET}",
         v["logins_per_run"]),
        (f"SSH logins for {BACK_TO_BACK} runs back to back", f"{s['back_to_back_logins']}", f"<= {LOGINS_TARGET}",
         v["logins_back_to_back"]),
        ("target CPU for observation per run-minute (s)", f"{cpu['observation_per_run_minute']:.3f}",
         f"<= {CPU_PER_RUN_MINUTE_TARGET_S}", v["cpu"]),
        ("IOPS ratio watched / unwatched (median)", f"{io['median_ratio']:.4f}", f">= {IOPS_RATIO_TARGET}",
         v["iops"]),
    ]  # fmt: skip
    for name, measured, target, ok in rows:
        print(f"   {name:<52} {measured:>10} {target:>9}  {'PASS' if ok else 'FAIL'}")


def _label(i: int, r: dict[str, Any]) -> str:
    # Runs alternate benchweb and by hand: two per number.
    return f"{(i + 1) // 2} {r['kind']}"


def _load(values: tuple[float, float, float]) -> str:
    return "/".join(f"{value:.2f}" for value in values)


# ----------------------------------------------------------------------------------------- entry point


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=8, help="IOPS pairs, alternated (default 8)")
    parser.add_argument("--runtime", type=int, default=60, help="fio runtime of the SSH and CPU runs, s (default 60)")
    parser.add_argument(
        "--runtime-pair", type=int, default=20, help="fio runtime of the pairs' and back-to-back runs, s (default 20)"
    )
    parser.add_argument("--runs", type=int, default=2, help="benchweb and by-hand runs for SSH and CPU (default 2)")
    parser.add_argument("--without-status-interval", type=int, default=0,
                        help="fio --status-interval of the pairs' runs by hand (default 0: none; benchweb's fio "
                             "writes a status document every second, which this isolates)")  # fmt: skip
    parser.add_argument("--target-cpu", type=int, default=None, help="the target side's CPU (default: the first)")
    # A directory of this script's own is made in it (mkdtemp), so the shared /dev/shm is safe to use.
    shm = Path("/dev/shm")  # noqa: S108
    parser.add_argument("--shm", type=Path, default=shm, help="tmpfs for the test file (default /dev/shm)")
    parser.add_argument("--json", action="store_true", help="print the results as one JSON document")
    add_smoke_option(parser, pairs=1, runtime=1, runtime_pair=1, runs=1)
    args = parse_args(parser, argv)
    if min(args.pairs, args.runtime, args.runtime_pair, args.runs) < 1:
        parser.error("--pairs, --runtime, --runtime-pair and --runs must be at least 1")

    interrupt_on_signals()
    stack = Stack("benchweb-observer-", args.shm)
    status, result = run_guarded("observer_cost", stack, lambda: measure(args, stack),
                                 (BenchError, subprocess.SubprocessError))  # fmt: skip
    if result is None:
        return status
    if args.json:
        print(json.dumps(result, indent=2, default=str))
    else:
        print_report(result)
    return verdict_status(args, all(result["verdict"].values()))


if __name__ == "__main__":
    sys.exit(main())
