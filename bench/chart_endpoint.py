"""How fast the all-time disk chart endpoint answers for a disk with 100,000 runs, on SQLite and PostgreSQL.

    .venv/bin/python bench/chart_endpoint.py [--db sqlite|postgres|both] [--runs 100000] [--requests 20]
        [--profile 30] [--database-url postgres://postgres@127.0.0.1:5432/benchweb_chartbench]

Each database gets a fresh, migrated benchweb database (SQLite in a temporary directory; on PostgreSQL the
database named in --database-url, which must not exist beforehand, is created, and dropped again at the end)
holding one team, one custom disk (8 x 5,000 IOPS striped: 40,000 IOPS, burst 50,000) and --runs finished runs
of six profiles spread over two years, bulk-created with summaries shaped like the fio parser's and stored as
a run stores them: read/write/total IOPS and bandwidth, completion-latency percentiles, json+ latency bins on
one profile (the per-second samples live in RunSample rows, which no disk chart reads, so none are made), the
limits snapshot a run takes and --raw-bytes of raw output. Every twentieth run of a profile is a
noisy-neighbour dip. Their result rows and day extremes (jobs.models.RunResult, RunResultDay) are written in
bulk, as migration 0005 writes them for the runs of an existing database, and the time that takes is reported.

Then a logged-in Django test Client asks GET /disks/<pk>/series.json?range=all --requests times (after
--warmup untimed requests), through the whole middleware stack, and the script reports the median and p95
wall time (and the CPU time the request took in this process, which the load of the machine disturbs
less), the query count, the payload size and the largest series; then the same for range=30d (drawn from
result rows rather than days) for comparison. --profile N then asks range=all ten more times under cProfile and
prints, on standard error, the N functions that took the most time of their own and the N that took the most
with what they called (the profiler slows Python calls, not the database or C code: a guide to where the time
goes, not a figure). Target, for range=all: median <= 80 ms with <= 2,000
points per series. Exit status: 0 met, 1 missed, 2 the measurement failed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from datetime import timedelta
from typing import Any

from benchkit import (
    PG_SERVER,
    Stack,
    add_database_options,
    add_smoke_option,
    configure_django,
    interrupt_on_signals,
    measure_and_report,
    p95_rounded,
    parse_args,
    say,
    server_version,
    time_gets,
)

DEFAULT_PG_URL = f"{PG_SERVER}/benchweb_chartbench"
TARGET_MEDIAN_MS = 80.0
MAX_POINTS = 2000
# (name, rw, block size, read share, typical total IOPS)
PROFILES = (
    ("4k randread QD64", "randread", 4096, 1.0, 23_500.0),
    ("4k randwrite QD64", "randwrite", 4096, 0.0, 21_000.0),
    ("64k randread QD64", "randread", 65536, 1.0, 17_000.0),
    ("64k seq write", "write", 65536, 0.0, 17_800.0),
    ("4k randrw 70/30 QD32", "randrw", 4096, 0.7, 19_000.0),
    ("1M seq read", "read", 2**20, 1.0, 1_060.0),
)


# ----------------------------------------------------------------------------------------- the runs


def _direction(rng: random.Random, iops: float, block_size: int, scale: float) -> dict[str, Any]:
    p50 = rng.uniform(900, 1300) * scale
    return {
        "iops": iops,
        "bw_bytes_per_s": iops * block_size,
        "clat_us": {
            "mean": p50 * 1.1, "max": p50 * rng.uniform(20, 60), "p50": p50, "p90": p50 * 1.8, "p95": p50 * 2.2,
            "p99": p50 * rng.uniform(3, 5), "p99_9": p50 * rng.uniform(8, 15),
        },
    }  # fmt: skip


def _summary(rng: random.Random, profile: tuple, index: int) -> dict[str, Any]:
    _, rw, block_size, read_share, typical = profile
    # A noisy neighbour every twentieth run, otherwise a few per cent of jitter.
    total = typical * (rng.uniform(0.3, 0.6) if index % 20 == 7 else rng.uniform(0.95, 1.05))
    scale = typical / total
    read_iops, write_iops = total * read_share, total * (1 - read_share)
    summary: dict[str, Any] = {
        "tool": "fio", "tool_version": "fio-3.33",
        "total": {"iops": total, "bw_bytes_per_s": total * block_size},
        "read": _direction(rng, read_iops, block_size, scale) if read_share > 0 else None,
        "write": _direction(rng, write_iops, block_size, scale) if read_share < 1 else None,
        "processes": 8, "block_size_bytes": block_size, "read_percent": 100 * read_share, "direct": True,
        "runtime_s": 60.0,
    }  # fmt: skip
    if rw == "randrw":
        # json+ on this profile: fio's ~1,856 possible bins, of which a run fills a hundred or so.
        summary["latency_bins_ns"] = {
            d: {str(int(1000 * 1.07**k)): rng.randint(1, 5000) for k in range(100, 200)} for d in ("read", "write")
        }
    return summary


def build(n_runs: int, raw_bytes: int, seed: int) -> tuple[Any, int, float]:
    """The team's user, the disk's pk and the seconds its results took, with n_runs finished runs spread over
    two years."""
    from django.contrib.auth.models import User
    from django.utils import timezone

    from jobs.models import Disk, Host, Profile, Run, RunResult, RunResultDay
    from jobs.teams import membership as teams

    rng = random.Random(seed)
    user = User.objects.create_user("bench")
    team = teams.place_new_user(user).team
    host = Host.objects.create(team=team, name="ultra-vm", address="10.0.0.5", username="bench")
    disk = Disk.objects.create(
        host=host, label="lvm-8x-ultra", target_path="/dev/vg0/bench", kind="block", disk_type="custom",
        spec_iops=40_000, spec_bytes_per_s=8 * 140_000_000, spec_burst_iops=50_000,
    )  # fmt: skip
    profiles = [
        Profile.objects.create(team=team, name=name, rw=rw, block_size_bytes=bs, iodepth=64, jobs=8, runtime_s=60)
        for name, rw, bs, _, _ in PROFILES
    ]
    snapshots = [disk.limits(block_size=p.block_size_bytes).as_dict() for p in profiles]
    now = timezone.now()
    step = timedelta(days=730) / n_runs
    raw_output = ("{fio JSON stand-in} " * (raw_bytes // 20 + 1))[:raw_bytes]
    batch: list[Run] = []
    started = time.monotonic()
    results_s = 0.0

    def store() -> None:
        nonlocal results_s
        Run.objects.bulk_create(batch)
        began = time.monotonic()
        RunResult.objects.bulk_create(RunResult.of(run) for run in batch)
        results_s += time.monotonic() - began
        batch.clear()

    for i in range(n_runs):
        which = i % len(PROFILES)
        finished = now - step * (n_runs - i)
        batch.append(Run(
            disk=disk, team=team, profile=profiles[which], profile_name=profiles[which].name,
            parameters=profiles[which].parameters(), state=Run.State.SUCCEEDED, trigger=Run.Trigger.SCHEDULE,
            started_at=finished - timedelta(seconds=61), finished_at=finished,
            summary=_summary(rng, PROFILES[which], i // len(PROFILES)), limits_snapshot=snapshots[which],
            command="[global]\nioengine=libaio\n...", raw_output=raw_output,
        ))  # fmt: skip
        if len(batch) == 2000:
            store()
            say(f"  {i + 1:,} runs ({time.monotonic() - started:.0f} s)")
    store()
    began = time.monotonic()
    RunResultDay.rebuild(disk)
    results_s += time.monotonic() - began
    _analyze()
    return user, disk.pk, results_s


def _analyze() -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")


# ----------------------------------------------------------------------------------------- measuring


def measure(args: argparse.Namespace, stack: Stack) -> dict[str, Any]:
    configure_django(stack, args.db, args.database_url)
    from django.test import Client

    say(f"[{args.db}] creating {args.runs:,} runs ...")
    user, disk_pk, results_s = build(args.runs, args.raw_bytes, args.seed)
    client = Client(HTTP_HOST="localhost")
    client.force_login(user)
    if args.profile:
        _profile(client, f"/disks/{disk_pk}/series.json?range=all", args.profile)
    return {
        "db": args.db,
        "server": server_version(),
        "results_s": results_s,
        "all": _ask(client, f"/disks/{disk_pk}/series.json?range=all", args),
        "30d": _ask(client, f"/disks/{disk_pk}/series.json?range=30d", args),
        "load_average": os.getloadavg(),
        "cpus": os.cpu_count(),
    }


def _profile(client: Any, url: str, lines: int) -> None:
    import cProfile
    import io
    import pstats

    client.get(url)
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(10):
        client.get(url)
    profiler.disable()
    for order in ("tottime", "cumulative"):
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats(order).print_stats(lines)
        say(f"{url}, 10 requests under cProfile, by {order}:\n{out.getvalue()}")


def _ask(client: Any, url: str, args: argparse.Namespace) -> dict[str, Any]:
    """--warmup untimed requests, --requests timed ones, and one more that counts the queries."""

    times, cpu_times, queries, body = time_gets(client, url, args.warmup, args.requests)
    data = json.loads(body)
    lengths = [
        len(points["x"])
        for series in data["series"]
        for points in [*series["iops"].values(), *(p for d in series["latency_us"].values() for p in d.values())]
        if points["x"]
    ]
    return {
        "runs": data["runs"],
        "profiles": len(data["series"]),
        "series": len(lengths),
        "max_points_per_series": max(lengths, default=0),
        "payload_bytes": len(body),
        "queries": queries,
        "times_ms": times,
        "cpu_ms": cpu_times,
    }


def _line(r: dict[str, Any]) -> str:
    times = r["times_ms"]
    return (f"{r['runs']:>7,} runs, {r['profiles']} profiles, {r['series']} series: median "
            f"{statistics.median(times):6.1f} ms, p95 {p95_rounded(times):6.1f} ms, min {min(times):6.1f} ms "
            f"({len(times)} requests; CPU in this process: median {statistics.median(r['cpu_ms']):.1f} ms); "
            f"{r['queries']} queries; largest series {r['max_points_per_series']:,} points; "
            f"{r['payload_bytes'] / 1e6:.2f} MB JSON")  # fmt: skip


def report(results: list[dict[str, Any]]) -> bool:
    met = True
    print(f"GET /disks/<pk>/series.json?range=all   target: median <= {TARGET_MEDIAN_MS:.0f} ms, "
          f"<= {MAX_POINTS:,} points per series")  # fmt: skip
    for r in results:
        everything = r["all"]
        ok = (
            statistics.median(everything["times_ms"]) <= TARGET_MEDIAN_MS
            and everything["max_points_per_series"] <= MAX_POINTS
        )
        met = met and ok
        print(f"  {r['server']:<22} range=all  {_line(everything)}  {'MET' if ok else 'MISSED'}")
        print(f"  {'':<22} range=30d  {_line(r['30d'])}")
        print(f"  {'':<22} result rows and day extremes of the runs written in bulk in {r['results_s']:.1f} s; "
              f"load average during the run {r['load_average'][0]:.1f} on {r['cpus']} CPUs")  # fmt: skip
    return met


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_database_options(parser, DEFAULT_PG_URL)
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument(
        "--raw-bytes",
        type=int,
        default=20_000,
        help="raw tool output stored with each run (default 20,000; real fio JSON is often more)",
    )
    parser.add_argument("--requests", type=int, default=20, help="timed requests (default 20)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed requests first (default 2)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--profile", type=int, default=0, metavar="N",
                        help="also profile range=all: its N costliest functions, on standard error")  # fmt: skip
    add_smoke_option(parser, db="sqlite", runs=300, raw_bytes=100, requests=2, warmup=0)
    args = parse_args(parser, argv)
    if args.runs < 1 or args.requests < 1 or args.warmup < 0:
        parser.error("need --runs >= 1, --requests >= 1, --warmup >= 0")
    interrupt_on_signals()
    return measure_and_report(__file__, argv, args, "chart_endpoint", measure, report)


if __name__ == "__main__":
    sys.exit(main())
