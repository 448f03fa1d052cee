"""What a benchweb run costs over the same fio job run by hand over ssh, and whether it reports the same IOPS.

    .venv/bin/python bench/run_overhead.py [--pairs 5] [--runtime 5] [--direct 1] [--json]

Everything runs on this machine in a fresh temporary directory: a migrated SQLite database, an embedded
redis-server, a Celery worker subprocess and a private sshd on 127.0.0.1. Each pair runs one fio job
(4k randread, psync, iodepth=1, numjobs=1, time_based, a fresh 64 MiB file in a directory, unlink=1) twice:

- plain:    `ssh -i KEY -p PORT user@127.0.0.1 fio --name=... --output-format=json`, timed around the ssh client;
- benchweb: `queueing.request_run(...)` until the Run row is final, read from the database every 20 ms (every
  250 ms while fio surely still runs, so that the harness loads the machine no more than in the plain run).

The target directory is on this machine's root filesystem (ext4 here), which takes O_DIRECT, so the default is
direct=1: the numbers are the disk's, not the page cache's. direct=0 works too (--direct 0), but with fio's
default invalidate=1 it reads from the disk as well.

Pairs alternate which kind goes first (AB BA AB ...) so that drift of the disk or the machine cancels out.
Targets: median wall-time ratio benchweb/plain <= 1.15 (overhead), and benchweb's stored IOPS within +-3 % of
the plain run's (fidelity, per pair and median). Exit status: 0 both targets met, 1 a target missed, 2 the
measurement itself failed, 130 interrupted. Whatever happens, every process started here is stopped and the
temporary directory is removed.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from benchkit import (
    BenchError,
    Stack,
    add_smoke_option,
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

FILE_SIZE = 64 * 2**20
OVERHEAD_TARGET = 1.15
FIDELITY_TARGET_PCT = 3.0
DB_POLL_S = 0.02
# Beyond the fio runtime: laying out the file, connecting, collecting. Far more than any healthy run needs.
RUN_SLACK_S = 120
_FIO_DOC = re.compile(r'\{\s*"fio version"\s*:')
_TASK_RECEIVED = re.compile(rb"Task jobs\.(\w+)\[([^\]]+)\] received")
_TASK_DONE = re.compile(rb"Task jobs\.\w+\[([^\]]+)\] succeeded in ([0-9.]+)s")


@dataclass
class Sample:
    kind: str  # "plain" or "benchweb"
    wall_s: float
    iops: float
    start_epoch: float
    end_epoch: float
    fio_end_epoch: float  # the timestamp of fio's final JSON document: when fio wrote its report
    phases: dict[str, float] = field(default_factory=dict)  # seconds, in order; they add up to wall_s
    run_id: int | None = None
    log_offset: int = 0  # where this run's lines start in the worker log
    tasks: dict[str, list[float]] = field(default_factory=dict)  # task name -> durations, from the worker log
    stored_vs_raw_pct: float | None = None  # benchweb's summary against the fio JSON it stored
    ssh_logins: int = 0  # from the sshd's log
    ssh_commands: int = 0


@dataclass
class Pair:
    number: int
    order: tuple[str, str]
    plain: Sample
    benchweb: Sample

    @property
    def ratio(self) -> float:
        return self.benchweb.wall_s / self.plain.wall_s

    @property
    def diff_pct(self) -> float:
        return (self.benchweb.iops - self.plain.iops) / self.plain.iops * 100


# ----------------------------------------------------------------------------------------- the loopback host


def plain_ssh(stack: Stack) -> list[str]:
    """The plain ssh command prefix: start_sshd's key, the loopback sshd's host key pinned."""
    client = stack.tmp / "client"
    key = stack.sshd.host_key
    known_hosts = client / "known_hosts"
    known_hosts.write_text(f"[127.0.0.1]:{stack.sshd.port} {key.key_type} {key.key_b64}\n")
    return [
        "ssh", "-F", "/dev/null", "-i", str(client / "id_ed25519"), "-p", str(stack.sshd.port),
        "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes",
        "-o", f"UserKnownHostsFile={known_hosts}", "-o", "GlobalKnownHostsFile=/dev/null",
        f"{login_user()}@127.0.0.1",
    ]  # fmt: skip


def make_objects(stack: Stack, private_key: str, target: Path, *, runtime: int, direct: bool) -> tuple[Any, Any]:
    """Team, credential, host with its pinned host key, a directory disk and the profile; returns (disk, profile)."""
    from jobs.models import Disk, Profile

    target.mkdir()
    host = loopback_host(stack, private_key, "overhead bench")
    disk = Disk.objects.create(host=host, label="bench", target_path=str(target), disk_type="custom")
    profile = Profile.objects.create(
        team=host.team, name="overhead 4k randread QD1", tool="fio", rw="randread", block_size_bytes=4096, iodepth=1,
        jobs=1, runtime_s=runtime, time_based=True, ioengine="psync", direct=direct, size_bytes=FILE_SIZE,
    )  # fmt: skip
    return disk, profile


# ----------------------------------------------------------------------------------------- one run of each kind


def plain_fio_argv(name: str, target: Path, *, runtime: int, direct: bool) -> list[str]:
    """The options benchweb writes into its job file, as fio command-line options."""
    return [
        "fio", f"--name={name}", f"--directory={target}", f"--size={FILE_SIZE}", "--rw=randread", "--bs=4096",
        "--ioengine=psync", f"--runtime={runtime}", "--time_based=1", f"--direct={int(direct)}", "--unlink=1",
        "--numjobs=1", "--iodepth=1", "--output-format=json",
    ]  # fmt: skip


def run_plain(ssh: list[str], fio_argv: list[str], runtime: int) -> Sample:
    start_epoch, t0 = time.time(), time.perf_counter()
    done = subprocess.run([*ssh, shlex.join(fio_argv)], capture_output=True, timeout=runtime + RUN_SLACK_S)
    wall, end_epoch = time.perf_counter() - t0, time.time()
    if done.returncode != 0:
        raise BenchError(f"plain ssh fio exited {done.returncode}: {done.stderr.decode(errors='replace')[-500:]}")
    doc = last_fio_document(done.stdout.decode(errors="replace"))
    fio_end = doc["timestamp_ms"] / 1000
    return Sample(
        kind="plain",
        wall_s=wall,
        iops=doc["jobs"][0]["read"]["iops"],
        start_epoch=start_epoch,
        end_epoch=end_epoch,
        fio_end_epoch=fio_end,
        phases={"connect+layout+fio": fio_end - start_epoch, "teardown": end_epoch - fio_end},
    )


def run_benchweb(stack: Stack, disk: Any, profile: Any, runtime: int) -> Sample:
    from jobs.models import Run
    from jobs.runs import queueing

    log_offset = stack.worker_log.stat().st_size
    start_epoch, t0 = time.time(), time.perf_counter()
    run = queueing.request_run(disk, profile)
    deadline = t0 + runtime + RUN_SLACK_S
    while True:
        state, started_at = Run.objects.filter(pk=run.pk).values_list("state", "started_at").get()
        if state in Run.FINAL_STATES:
            break
        if time.perf_counter() > deadline:
            raise BenchError(f"benchweb run {run.pk} was not final after {runtime + RUN_SLACK_S} s")
        # While fio surely still runs, look rarely: the plain run's timer costs the machine nothing either.
        quiet = started_at is not None and time.time() < started_at.timestamp() + runtime - 0.5
        time.sleep(0.25 if quiet else DB_POLL_S)
    wall, end_epoch = time.perf_counter() - t0, time.time()
    run.refresh_from_db()
    if run.state != Run.State.SUCCEEDED:
        raise BenchError(f"benchweb run {run.pk} ended {run.state}: {run.explanation}")
    doc = last_fio_document(run.raw_output)
    fio_end = doc["timestamp_ms"] / 1000
    stored, raw = run.summary["total"]["iops"], doc["jobs"][0]["read"]["iops"]
    _wait_for_cleanup(Path(run.remote_dir))
    return Sample(
        kind="benchweb",
        wall_s=wall,
        iops=stored,
        start_epoch=start_epoch,
        end_epoch=end_epoch,
        fio_end_epoch=fio_end,
        phases={
            "create+claim": run.queued_at.timestamp() - start_epoch,
            "launch": run.started_at.timestamp() - run.queued_at.timestamp(),
            "layout+fio": fio_end - run.started_at.timestamp(),
            "detect+collect": run.finished_at.timestamp() - fio_end,
            "observe": end_epoch - run.finished_at.timestamp(),
        },
        run_id=run.pk,
        log_offset=log_offset,
        stored_vs_raw_pct=(stored - raw) / raw * 100,
    )


def _wait_for_cleanup(run_dir: Path) -> None:
    # The worker removes the run directory just after storing the result: let it finish before the next
    # measurement, so that its SSH session does not overlap the next fio.
    deadline = time.monotonic() + 15
    while run_dir.exists() and time.monotonic() < deadline:
        time.sleep(DB_POLL_S)


def last_fio_document(text: str) -> dict[str, Any]:
    """The last complete fio JSON document: with --status-interval benchweb stores a stream of them."""
    decoder = json.JSONDecoder(strict=False)
    last = None
    for match in _FIO_DOC.finditer(text):
        with contextlib.suppress(json.JSONDecodeError):
            last = decoder.raw_decode(text, match.start())[0]
    if last is None:
        raise BenchError(f"no fio JSON document in the output: {text[:300]!r}")
    return last


def attach_worker_tasks(samples: list[Sample], worker_log: Path) -> None:
    """Each benchweb run's task durations from the worker log. A task belongs to the run during which it was
    received: a run's last poll logs its end after the run is final, sometimes among the next run's lines."""
    text = _settled_log(worker_log)
    durations = {task_id: float(seconds) for task_id, seconds in _TASK_DONE.findall(text)}
    ordered = sorted(samples, key=lambda s: s.log_offset, reverse=True)
    for sample in ordered:
        sample.tasks = {}
    for match in _TASK_RECEIVED.finditer(text):
        owner = next((s for s in ordered if s.log_offset <= match.start()), None)
        if owner is not None and match.group(2) in durations:
            owner.tasks.setdefault(match.group(1).decode(), []).append(durations[match.group(2)])


def count_ssh(stack: Stack, measure_one: Callable[[], Sample]) -> Sample:
    """Run one measurement and count, in the sshd's log, the logins and the commands it took."""
    before = stack.sshd.log_path.stat().st_size
    sample = measure_one()
    counts = sshd_counts(stack, before)
    sample.ssh_logins, sample.ssh_commands = counts["logins"], counts["commands"]
    return sample


def _settled_log(worker_log: Path) -> bytes:
    # The last run's final poll logs its end only after it cleaned up on the host: wait until every task
    # the log says was received has also ended, for a few seconds at most.
    deadline = time.monotonic() + 10
    while True:
        text = worker_log.read_bytes()
        ended = text.count(b"] succeeded in ") + text.count(b"] raised ") + text.count(b"] retry: ")
        if ended >= text.count(b"] received") or time.monotonic() > deadline:
            return text
        time.sleep(0.1)


# ----------------------------------------------------------------------------------------- the measurement


def measure(args: argparse.Namespace, stack: Stack) -> dict[str, Any]:
    configure_django(stack, "sqlite", "")
    start_redis(stack)
    start_worker(stack, [sys.executable, "-m", "celery", "-A", "benchweb", "worker", *worker_options(4, "bench")])
    private_key = start_sshd(stack)
    ssh = plain_ssh(stack)
    target = stack.tmp / "target"
    disk, profile = make_objects(stack, private_key, target, runtime=args.runtime, direct=args.direct)
    load_before = os.getloadavg()[0]

    counter = iter(range(1_000_000))

    def plain() -> Sample:
        argv = plain_fio_argv(f"plain-{next(counter)}", target, runtime=args.runtime, direct=args.direct)
        return count_ssh(stack, lambda: run_plain(ssh, argv, args.runtime))

    def benchweb() -> Sample:
        return count_ssh(stack, lambda: run_benchweb(stack, disk, profile, args.runtime))

    say("warming up: one untimed run of each kind")
    warm = [plain(), benchweb()]
    pairs = []
    for number in range(1, args.pairs + 1):
        order = ("plain", "benchweb") if number % 2 else ("benchweb", "plain")
        done = {kind: {"plain": plain, "benchweb": benchweb}[kind]() for kind in order}
        pair = Pair(number, order, done["plain"], done["benchweb"])
        say(
            f"pair {number}/{args.pairs} ({' then '.join(order)}): plain {pair.plain.wall_s:.2f} s, "
            f"benchweb {pair.benchweb.wall_s:.2f} s, ratio {pair.ratio:.3f}, IOPS diff {pair.diff_pct:+.1f} %"
        )
        pairs.append(pair)
    attach_worker_tasks([warm[1], *(p.benchweb for p in pairs)], stack.worker_log)
    result = summarise(args, ssh, pairs, warm)
    # Other work on this machine moves both timings and IOPS: say how busy it was.
    result["config"] |= {"cpus": os.cpu_count(), "load_1min_before": load_before, "load_1min_after": os.getloadavg()[0]}
    return result


def summarise(args: argparse.Namespace, ssh: list[str], pairs: list[Pair], warm: list[Sample]) -> dict[str, Any]:
    ratios = [p.ratio for p in pairs]
    diffs = [p.diff_pct for p in pairs]
    plain_iops = [p.plain.iops for p in pairs]
    bw_iops = [p.benchweb.iops for p in pairs]
    plain_runs = sorted((p.plain for p in pairs), key=lambda s: s.start_epoch)
    successive = [abs(b.iops - a.iops) / a.iops * 100 for a, b in itertools.pairwise(plain_runs)]
    median_ratio, median_diff = statistics.median(ratios), statistics.median(diffs)
    within = sum(abs(d) <= FIDELITY_TARGET_PCT for d in diffs)
    return {
        "config": {
            "pairs": args.pairs,
            "runtime_s": args.runtime,
            "direct": int(args.direct),
            "rw": "randread",
            "bs": 4096,
            "ioengine": "psync",
            "iodepth": 1,
            "numjobs": 1,
            "size_bytes": FILE_SIZE,
            "plain_command": shlex.join(
                [*ssh, *plain_fio_argv("plain-N", Path("TARGET"), runtime=args.runtime, direct=args.direct)]
            ),
        },
        "pairs": [
            {
                "pair": p.number,
                "order": list(p.order),
                "ratio": p.ratio,
                "diff_pct": p.diff_pct,
                "plain": asdict(p.plain),
                "benchweb": asdict(p.benchweb),
            }
            for p in pairs
        ],
        "warmup": [asdict(s) for s in warm],
        "median": {
            "plain_s": statistics.median(p.plain.wall_s for p in pairs),
            "benchweb_s": statistics.median(p.benchweb.wall_s for p in pairs),
            "ratio": median_ratio,
            "plain_iops": statistics.median(plain_iops),
            "benchweb_iops": statistics.median(bw_iops),
            "diff_pct": median_diff,
            "benchweb_phases": {
                name: statistics.median(p.benchweb.phases[name] for p in pairs) for name in pairs[0].benchweb.phases
            },
            "plain_phases": {
                name: statistics.median(p.plain.phases[name] for p in pairs) for name in pairs[0].plain.phases
            },
        },
        "noise": {
            "plain_iops_cv_pct": _cv(plain_iops),
            "benchweb_iops_cv_pct": _cv(bw_iops),
            "successive_plain_abs_diff_pct_median": statistics.median(successive) if successive else None,
            "stored_vs_raw_pct_max": max(abs(p.benchweb.stored_vs_raw_pct or 0) for p in pairs),
        },
        "verdict": {
            "overhead": median_ratio <= OVERHEAD_TARGET,
            "fidelity_median": abs(median_diff) <= FIDELITY_TARGET_PCT,
            "fidelity_pairs_within": within,
            "fidelity_per_pair": within == len(pairs),
        },
    }


def _cv(values: list[float]) -> float | None:
    return statistics.stdev(values) / statistics.mean(values) * 100 if len(values) > 1 else None


# ----------------------------------------------------------------------------------------- output


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def print_report(result: dict[str, Any]) -> None:
    c, m, n, v = result["config"], result["median"], result["noise"], result["verdict"]
    print(f"fio 4k randread, psync, iodepth=1, numjobs=1, {c['runtime_s']} s time_based, direct={c['direct']}, "
          f"fresh 64 MiB file in a directory, unlink=1; {c['pairs']} pairs against a loopback sshd")  # fmt: skip
    print(f"plain: {c['plain_command']}")
    print(f"machine: {c['cpus']} CPUs, 1-minute load average {c['load_1min_before']:.2f} before, "
          f"{c['load_1min_after']:.2f} after\n")  # fmt: skip
    print(f"{'pair':>4}  {'order':<8}  {'plain s':>8}  {'benchweb s':>10}  {'ratio':>6}  "
          f"{'plain IOPS':>10}  {'benchweb IOPS':>13}  {'diff %':>7}")  # fmt: skip
    for p in result["pairs"]:
        order = "P,B" if p["order"][0] == "plain" else "B,P"
        print(f"{p['pair']:>4}  {order:<8}  {p['plain']['wall_s']:>8.2f}  {p['benchweb']['wall_s']:>10.2f}  "
              f"{p['ratio']:>6.3f}  {p['plain']['iops']:>10.0f}  {p['benchweb']['iops']:>13.0f}  "
              f"{p['diff_pct']:>+7.2f}")  # fmt: skip
    print(f"{'med':>4}  {'':<8}  {m['plain_s']:>8.2f}  {m['benchweb_s']:>10.2f}  {m['ratio']:>6.3f}  "
          f"{m['plain_iops']:>10.0f}  {m['benchweb_iops']:>13.0f}  {m['diff_pct']:>+7.2f}\n")  # fmt: skip

    names = list(m["benchweb_phases"])
    print("where the benchweb time goes (s; the phases add up to the wall time)")
    header = "  ".join(f"{name:>14}" for name in names)
    print(f"{'pair':>4}  {header}  ssh logins/commands  worker tasks (count, total s)")
    for p in result["pairs"]:
        b = p["benchweb"]
        phases = "  ".join(f"{b['phases'][name]:>14.3f}" for name in names)
        tasks = ", ".join(f"{name} {len(d)}x {sum(d):.2f}" for name, d in sorted(b["tasks"].items()))
        print(f"{p['pair']:>4}  {phases}  {b['ssh_logins']:>10}/{b['ssh_commands']:<8}  {tasks}")
    print(f"{'med':>4}  " + "  ".join(f"{m['benchweb_phases'][name]:>14.3f}" for name in names))
    plain_phases = ", ".join(f"{name} {seconds:.3f}" for name, seconds in m["plain_phases"].items())
    first = result["pairs"][0]["plain"]
    print(f"plain, median (s): {plain_phases}; ssh logins/commands {first['ssh_logins']}/{first['ssh_commands']}\n")

    successive = _fmt(n["successive_plain_abs_diff_pct_median"])
    print(
        f"noise floor: IOPS CV plain {_fmt(n['plain_iops_cv_pct'])} %, benchweb {_fmt(n['benchweb_iops_cv_pct'])} %; "
        f"successive plain runs differ by {successive} % (median); benchweb's stored IOPS vs the fio JSON it "
        f"stored: max {n['stored_vs_raw_pct_max']:.4f} %"
    )
    print(f"overhead: median ratio {m['ratio']:.3f} (target <= {OVERHEAD_TARGET})  {verdict(v['overhead'])}")
    print(f"fidelity: median diff {m['diff_pct']:+.2f} % (target within +-{FIDELITY_TARGET_PCT:.0f} %)  "
          f"{verdict(v['fidelity_median'])}")  # fmt: skip
    print(f"fidelity: {v['fidelity_pairs_within']}/{len(result['pairs'])} pairs within +-{FIDELITY_TARGET_PCT:.0f} %"
          f"  {verdict(v['fidelity_per_pair'])}")  # fmt: skip


def _fmt(value: float | None) -> str:
    return fmt(value, 2, "n/a")


# ----------------------------------------------------------------------------------------- entry point


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=5, help="measured pairs after one warm-up (default 5)")
    parser.add_argument("--runtime", type=int, default=5, help="fio runtime in seconds (default 5)")
    parser.add_argument("--direct", type=int, choices=(0, 1), default=1, help="fio direct= (default 1: O_DIRECT)")
    parser.add_argument("--json", action="store_true", help="print the results as one JSON document")
    add_smoke_option(parser, pairs=1, runtime=1)
    args = parse_args(parser, argv)
    if args.pairs < 1 or args.runtime < 1:
        parser.error("--pairs and --runtime must be at least 1")
    args.direct = bool(args.direct)

    interrupt_on_signals()
    stack = Stack("benchweb-overhead-")
    status, result = run_guarded("run_overhead", stack, lambda: measure(args, stack),
                                 (BenchError, subprocess.SubprocessError))  # fmt: skip
    if result is None:
        return status
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_report(result)
    ok = result["verdict"]
    return verdict_status(args, ok["overhead"] and ok["fidelity_median"] and ok["fidelity_per_pair"])


if __name__ == "__main__":
    sys.exit(main())
