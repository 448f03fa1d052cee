"""How fast a disk's promise compliance answers for a disk with 100,000 runs, on SQLite and PostgreSQL.

    .venv/bin/python bench/compliance.py [--db sqlite|postgres|both] [--runs 100000] [--requests 20]
        [--sampled-runs 1000] [--database-url postgres://postgres@127.0.0.1:5432/benchweb_compliancebench]

The disk and its runs are bench/chart_endpoint.py's (one custom 40,000 IOPS disk, six profiles over two years,
every twentieth run of a profile a noisy-neighbour dip at 30-60 %), built the same way; the newest
--sampled-runs runs also get 60 per-second RunSample rows each, so the per-second share reads as many samples as
it ever reads. Then a logged-in Django test Client asks GET /api/v1/disks/<pk>/compliance/?period=all (every
run: the aggregate over the result rows, the worst hour, the longest streak in SQL, the newest runs' samples)
and the same for period=30d, --requests times each after --warmup untimed ones, and reports the median and p95
wall time, the CPU time in this process and the query count. Target, for period=all: median <= 150 ms, the
chart endpoint's budget. Exit status: 0 met, 1 missed, 2 the measurement failed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
from typing import Any

import chart_endpoint
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

DEFAULT_PG_URL = f"{PG_SERVER}/benchweb_compliancebench"
TARGET_MEDIAN_MS = 150.0


def add_samples(disk_pk: int, n_runs: int, seed: int) -> None:
    """60 per-second samples for each of the disk's newest n_runs runs, around each run's measured IOPS."""
    from jobs.models import RunResult, RunSample

    rng = random.Random(seed)
    newest = RunResult.objects.filter(disk_id=disk_pk).order_by("-finished_at").values_list("run_id", "total_iops")
    batch = []
    for run_id, iops in newest[:n_runs]:
        batch.extend(
            RunSample(run_id=run_id, t_s=t, read_iops=(iops or 0) * rng.uniform(0.8, 1.2)) for t in range(1, 61)
        )
    RunSample.objects.bulk_create(batch, batch_size=5000)
    chart_endpoint._analyze()


def measure(args: argparse.Namespace, stack: Stack) -> dict[str, Any]:
    configure_django(stack, args.db, args.database_url)
    from django.test import Client

    say(f"[{args.db}] creating {args.runs:,} runs ...")
    user, disk_pk, _ = chart_endpoint.build(args.runs, args.raw_bytes, args.seed)
    say(f"[{args.db}] samples for the newest {args.sampled_runs:,} runs ...")
    add_samples(disk_pk, args.sampled_runs, args.seed)
    client = Client(HTTP_HOST="localhost")
    client.force_login(user)
    return {
        "db": args.db,
        "server": server_version(),
        "all": _ask(client, f"/api/v1/disks/{disk_pk}/compliance/?period=all", args),
        "30d": _ask(client, f"/api/v1/disks/{disk_pk}/compliance/?period=30d", args),
        "load_average": os.getloadavg(),
        "cpus": os.cpu_count(),
    }


def _ask(client: Any, url: str, args: argparse.Namespace) -> dict[str, Any]:
    """--warmup untimed requests, --requests timed ones, and one more that counts the queries."""

    times, cpu_times, queries, body = time_gets(client, url, args.warmup, args.requests)
    data = json.loads(body)
    return {
        "runs": data["runs"],
        "below_share": data["below_share"],
        "seconds": data["seconds"]["seconds"],
        "queries": queries,
        "times_ms": times,
        "cpu_ms": cpu_times,
    }


def _line(r: dict[str, Any]) -> str:
    times = r["times_ms"]
    return (f"{r['runs']:>7,} runs (below {r['below_share']:.3f}), {r['seconds']:,} samples: median "
            f"{statistics.median(times):6.1f} ms, p95 {p95_rounded(times):6.1f} ms, min {min(times):6.1f} ms "
            f"({len(times)} requests; CPU in this process: median {statistics.median(r['cpu_ms']):.1f} ms); "
            f"{r['queries']} queries")  # fmt: skip


def report(results: list[dict[str, Any]]) -> bool:
    met = True
    print(f"GET /api/v1/disks/<pk>/compliance/?period=all   target: median <= {TARGET_MEDIAN_MS:.0f} ms")
    for r in results:
        ok = statistics.median(r["all"]["times_ms"]) <= TARGET_MEDIAN_MS
        met = met and ok
        print(f"  {r['server']:<22} period=all  {_line(r['all'])}  {'MET' if ok else 'MISSED'}")
        print(f"  {'':<22} period=30d  {_line(r['30d'])}")
        print(f"  {'':<22} load average during the run {r['load_average'][0]:.1f} on {r['cpus']} CPUs")
    return met


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_database_options(parser, DEFAULT_PG_URL)
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--sampled-runs", type=int, default=1_000, help="newest runs given samples (default 1,000)")
    parser.add_argument("--raw-bytes", type=int, default=2_000, help="raw tool output per run (default 2,000)")
    parser.add_argument("--requests", type=int, default=20, help="timed requests (default 20)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed requests first (default 2)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    add_smoke_option(parser, db="sqlite", runs=300, sampled_runs=5, raw_bytes=100, requests=2, warmup=0)
    args = parse_args(parser, argv)
    if args.runs < 1 or args.requests < 1 or args.warmup < 0 or args.sampled_runs < 0:
        parser.error("need --runs >= 1, --requests >= 1, --warmup >= 0, --sampled-runs >= 0")
    interrupt_on_signals()
    return measure_and_report(__file__, argv, args, "compliance", measure, report)


if __name__ == "__main__":
    sys.exit(main())
