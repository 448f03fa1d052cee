"""How fast GET /metrics answers for a team with 200 disks under 6 profiles each, on SQLite and PostgreSQL.

    .venv/bin/python bench/metrics.py [--db sqlite|postgres|both] [--disks 200] [--profiles 6] [--days 90]
        [--requests 20] [--database-url postgres://postgres@127.0.0.1:5432/benchweb_metricsbench]

One team with 20 hosts and --disks custom disks (40,000 IOPS at 4 KiB), each run under --profiles profiles once a
day for --days days (every run with its RunResult, every disk's per-day rollup rebuilt as a bulk writer leaves
it), plus a few pending, queued, running and failed runs. Then a Django test Client with the team's API token
asks GET /metrics --requests times after --warmup untimed ones, and the report gives the median and p95 wall time,
the CPU time in this process, the number of SQL queries (which must not grow with the disks:
tests/metrics/test_metrics.py asserts that) and the number of samples. No broker runs here: the worker ping fails
at once, so this times the database part of a scrape; a ping that reaches a broker adds at most 0.5 s, once every
15 s per web process.

Target: median <= 1 s, a tenth of Prometheus's default scrape_timeout (10 s). The work grows with the disks and
profiles (the samples, about 8 per disk and profile, and their formatting by prometheus_client) and with the days
of history (the latest results are ranked over the whole per-day rollup: one row per disk, profile and day), not
with the runs per day. Exit status: 0 met, 1 missed, 2 the measurement failed.
"""

from __future__ import annotations

import argparse
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

DEFAULT_PG_URL = f"{PG_SERVER}/benchweb_metricsbench"
TARGET_MEDIAN_MS = 1000.0
HOSTS = 20
PROFILE_NAMES = ("randread-4k", "randwrite-4k", "randrw-4k", "seqread-1m", "seqwrite-1m", "randread-64k",
                 "randread-8k", "randwrite-8k")  # fmt: skip


def build(args: argparse.Namespace) -> tuple[str, int]:
    """The team and its history; returns (an API token of the team, runs made)."""
    from django.contrib.auth.models import User
    from django.utils import timezone

    from jobs.api.models import ApiToken
    from jobs.models import Disk, Host, Membership, Profile, Run, RunResult, RunResultDay, Team
    from tests.factories import fio_summary

    rng = random.Random(args.seed)
    user = User.objects.create_user("prometheus")
    team = Team.objects.create(name="bench team")
    Membership.objects.create(user=user, team=team, role=Membership.Role.VIEWER)
    profiles = [Profile.objects.create(team=team, name=name, rw="randread", runtime_s=60, size_bytes=2**30)
                for name in (PROFILE_NAMES * 10)[: args.profiles]]  # fmt: skip
    hosts = Host.objects.bulk_create(
        Host(team=team, name=f"vm{i:02}", address=f"10.0.0.{i + 1}", username="bench") for i in range(HOSTS)
    )
    disks = Disk.objects.bulk_create(
        Disk(host=hosts[i % HOSTS], team=team, label=f"d{i:03}", target_path=f"/data/d{i:03}", disk_type="custom",
             spec_iops=40_000, spec_bytes_per_s=400_000_000)
        for i in range(args.disks)
    )  # fmt: skip
    now = timezone.now()
    made = 0
    for disk in disks:
        snapshot = disk.limits_snapshot(4096)
        runs = []
        for day in range(args.days):
            for k, profile in enumerate(profiles):
                finished = now - timedelta(days=day, hours=rng.uniform(0, 20), minutes=k)
                runs.append(Run(disk=disk, team=team, profile=profile, profile_name=profile.name,
                                parameters=profile.parameters(), state=Run.State.SUCCEEDED,
                                summary=fio_summary(read_iops=rng.uniform(10_000, 42_000)), limits_snapshot=snapshot,
                                started_at=finished - timedelta(seconds=60), finished_at=finished))  # fmt: skip
        Run.objects.bulk_create(runs, batch_size=2000)
        RunResult.objects.bulk_create((RunResult.of(run) for run in runs), batch_size=2000)
        RunResultDay.rebuild(disk)
        made += len(runs)
    extra = [Run(disk=disks[0], team=team, state=Run.State.QUEUED, queued_at=now - timedelta(seconds=30)),
             Run(disk=disks[1], team=team, state=Run.State.RUNNING, started_at=now),
             Run(disk=disks[2], team=team, state=Run.State.PENDING, not_before=now - timedelta(minutes=3)),
             Run(disk=disks[3], team=team, state=Run.State.FAILED, finished_at=now)]  # fmt: skip
    Run.objects.bulk_create(extra)
    return ApiToken.issue(user, team, "prometheus")[1], made + len(extra)


def measure(args: argparse.Namespace, stack: Stack) -> dict[str, Any]:
    configure_django(stack, args.db, args.database_url)
    from django.db import connection
    from django.test import Client
    from prometheus_client.parser import text_string_to_metric_families

    began = time.perf_counter()
    say(f"[{args.db}] {args.disks} disks x {args.profiles} profiles x {args.days} days ...")
    token, runs = build(args)
    say(f"[{args.db}] {runs:,} runs built in {time.perf_counter() - began:.0f} s")
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
    client = Client(HTTP_HOST="localhost", HTTP_AUTHORIZATION=f"Bearer {token}")
    times, cpu_times, queries, body = time_gets(client, "/metrics", args.warmup, args.requests)
    families = list(text_string_to_metric_families(body.decode()))
    latest = next(f for f in families if f.name == "benchweb_latest_run_iops")
    return {
        "db": args.db, "server": server_version(), "runs": runs, "disks": args.disks, "profiles": args.profiles,
        "times_ms": times, "cpu_ms": cpu_times, "queries": queries,
        "samples": sum(len(f.samples) for f in families), "latest_series": len(latest.samples),
        "bytes": len(body), "load_average": os.getloadavg(), "cpus": os.cpu_count(),
    }  # fmt: skip


def report(results: list[dict[str, Any]]) -> bool:
    met = True
    print(f"GET /metrics   target: median <= {TARGET_MEDIAN_MS:.0f} ms")
    for r in results:
        times = r["times_ms"]
        ok = statistics.median(times) <= TARGET_MEDIAN_MS
        met = met and ok
        print(f"  {r['server']:<22} {r['disks']} disks x {r['profiles']} profiles, {r['runs']:,} runs: "
              f"{r['latest_series']} latest-run series, {r['samples']:,} samples, {r['bytes']:,} bytes; median "
              f"{statistics.median(times):.1f} ms, p95 {p95_rounded(times):.1f} ms, min {min(times):.1f} ms "
              f"({len(times)} requests; CPU in this process: median {statistics.median(r['cpu_ms']):.1f} ms); "
              f"{r['queries']} queries  {'MET' if ok else 'MISSED'}")  # fmt: skip
        print(f"  {'':<22} load average during the run {r['load_average'][0]:.1f} on {r['cpus']} CPUs")
    return met


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_database_options(parser, DEFAULT_PG_URL)
    parser.add_argument("--disks", type=int, default=200)
    parser.add_argument("--profiles", type=int, default=6)
    parser.add_argument("--days", type=int, default=90, help="days of history, one run a day per profile")
    parser.add_argument("--requests", type=int, default=20, help="timed requests (default 20)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed requests first (default 2)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    add_smoke_option(parser, db="sqlite", disks=4, profiles=2, days=3, requests=2, warmup=0)
    args = parse_args(parser, argv)
    if min(args.profiles, args.days, args.requests) < 1 or args.disks < 4 or args.warmup < 0:
        parser.error("need --disks >= 4 (the failed run's disk is the fourth), --profiles, --days and --requests >= 1, "
                     "--warmup >= 0")  # fmt: skip
    interrupt_on_signals()
    return measure_and_report(__file__, argv, args, "metrics", measure, report)


if __name__ == "__main__":
    sys.exit(main())
