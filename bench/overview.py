"""How long the overview page takes to render for a team with 200 disks, on SQLite and on PostgreSQL.

    .venv/bin/python bench/overview.py [--db sqlite|postgres|both] [--disks 200] [--runs-per-day 2]
        [--requests 30] [--database-url postgres://postgres@127.0.0.1:5432/benchweb_bench]

Each database gets a fresh, migrated benchweb database and one team with 20 hosts, 200 disks of catalog types
and, per disk, `--runs-per-day` finished runs every day for the last 60 days (their summaries from a real fio
JSON in tests/fixtures, IOPS varied, each with the RunResult row a stored run has), plus a few running, waiting
and failed runs so every section of the page has rows. The page is then requested through Django's test
client as a logged-in member (the whole stack of middleware, view, queries and template, without a network
hop): untimed warm-up requests first, then `--requests` timed ones. The report gives median, p95 and max, and
the number of SQL queries per request, which must not grow with the number of disks (tests/pages/test_manage_pages.py
asserts that; this script only times).

Target: median <= 300 ms on each database. Exit status: 0 met, 1 missed, 2 the measurement failed. The
temporary directory and the PostgreSQL database (which must not exist beforehand) are removed again.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from datetime import timedelta

from benchkit import (
    DEFAULT_PG_URL,
    ROOT,
    BenchError,
    Stack,
    add_database_options,
    add_smoke_option,
    configure_django,
    each_database,
    interrupt_on_signals,
    parse_args,
    run_guarded,
    say,
    verdict_status,
)

TARGET_MEDIAN_MS = 300.0
HOSTS = 20
DAYS = 60
DISK_TYPES = (("aws-gp3", 500, {}), ("azure-premium-ssd", 1024, {}), ("gcp-pd-ssd", 500, {}),
              ("custom", None, {"spec_iops": 50000}))  # fmt: skip


def build(disks: int, runs_per_day: int, seed: int) -> tuple[object, int]:
    """The team's hosts, disks and run history; returns (a member user, runs made)."""
    from django.contrib.auth.models import User
    from django.utils import timezone

    from jobs.imports import importing
    from jobs.models import Disk, Host, Membership, Profile, Run, RunResult, Team

    rng = random.Random(seed)
    parsed = importing.parse_import((ROOT / "tests/fixtures/fio-3.33-randrw.json").read_text())
    user = User.objects.create_user("bench")  # force_login below: no password needed
    team = Team.objects.create(name="bench team")
    Membership.objects.create(user=user, team=team, role=Membership.Role.OWNER)
    profile = Profile.objects.create(team=team, name="4k randrw", rw="randrw", runtime_s=60, size_bytes=2**30)
    hosts = Host.objects.bulk_create(
        Host(team=team, name=f"vm{i:02}", address=f"10.0.0.{i + 1}", username="bench") for i in range(HOSTS)
    )
    made = []
    for i in range(disks):
        kind, size, extra = DISK_TYPES[i % len(DISK_TYPES)]
        made.append(Disk(host=hosts[i % HOSTS], team=team, label=f"d{i:03}", target_path=f"/data/d{i:03}",
                         disk_type=kind, size=size, **extra))  # fmt: skip
    disk_rows = Disk.objects.bulk_create(made)
    now = timezone.now()
    runs = []
    for disk in disk_rows:
        snapshot = disk.limits_snapshot(4096)
        for day in range(DAYS):
            for k in range(runs_per_day):
                finished = now - timedelta(days=day, hours=rng.uniform(0, 23), minutes=k)
                summary = dict(parsed.summary)
                summary["total"] = dict(summary["total"], iops=rng.uniform(500, 5000))
                runs.append(Run(disk=disk, team=team, profile=profile, profile_name=profile.name,
                                parameters=profile.parameters(), state=Run.State.SUCCEEDED, summary=summary,
                                limits_snapshot=snapshot, started_at=finished - timedelta(seconds=70),
                                finished_at=finished, explanation="done"))  # fmt: skip
    for disk in disk_rows[:5]:
        runs.append(Run(disk=disk, team=team, profile=profile, profile_name=profile.name, state=Run.State.RUNNING,
                        started_at=now, progress={"elapsed_s": 20, "expected_s": 60}))  # fmt: skip
    for disk in disk_rows[5:10]:
        runs.append(Run(disk=disk, team=team, profile=profile, profile_name=profile.name, state=Run.State.PENDING,
                        not_before=now - timedelta(seconds=5), explanation="waiting: disk busy"))  # fmt: skip
        runs.append(Run(disk=disk, team=team, profile=profile, profile_name=profile.name, state=Run.State.ERROR,
                        finished_at=now - timedelta(hours=1), explanation="could not start: refused"))  # fmt: skip
    Run.objects.bulk_create(runs, batch_size=2000)
    # As RunResult.record stores the result of every succeeded run: the overview reads these narrow rows.
    results = [RunResult.of(run) for run in runs if run.state == Run.State.SUCCEEDED]
    RunResult.objects.bulk_create(results, batch_size=2000)
    return user, len(runs)


def measure(db: str, args: argparse.Namespace, stack: Stack) -> dict[str, float]:
    configure_django(stack, db, args.database_url)
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    t0 = time.perf_counter()
    user, runs = build(args.disks, args.runs_per_day, args.seed)
    say(f"[{db}] {args.disks} disks, {runs} runs built in {time.perf_counter() - t0:.1f} s")
    client = Client(HTTP_HOST="localhost")
    client.force_login(user)
    for _ in range(3):
        response = client.get("/overview/")
        if response.status_code != 200:
            raise BenchError(f"/overview/ answered {response.status_code}")
    rendered = response.content.decode().count('<th scope="row"><a href="/disks/')
    times, queries = [], []
    for _ in range(args.requests):
        with CaptureQueriesContext(connection) as ctx:
            t0 = time.perf_counter()
            client.get("/overview/")
            times.append((time.perf_counter() - t0) * 1000)
        queries.append(len(ctx.captured_queries))
    ordered = sorted(times)
    return {
        "median": statistics.median(times),
        "p95": ordered[max(0, round(0.95 * len(ordered)) - 1)],
        "max": ordered[-1],
        "queries": statistics.median(queries),
        "rows": rendered,
        "runs": runs,
    }


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_database_options(parser, DEFAULT_PG_URL)
    parser.add_argument("--disks", type=int, default=200)
    parser.add_argument("--runs-per-day", type=int, default=2)
    parser.add_argument("--requests", type=int, default=30)
    parser.add_argument("--seed", type=int, default=1)
    add_smoke_option(parser, db="sqlite", disks=3, runs_per_day=1, requests=2)
    args = parse_args(parser, argv)
    if args.disks < 1 or args.requests < 1 or args.runs_per_day < 0:
        parser.error("need --disks >= 1, --requests >= 1, --runs-per-day >= 0")
    interrupt_on_signals()
    if args.db == "both":
        # Each child prints its own line.
        status = 0
        try:
            for code, _ in each_database(__file__, argv, capture=False):
                status = max(status, code)
        except KeyboardInterrupt:
            return 130
        return status
    stack = Stack("benchweb-bench-")
    status, result = run_guarded(f"overview [{args.db}]", stack, lambda: measure(args.db, args, stack))
    if result is None:
        return status
    met = result["median"] <= TARGET_MEDIAN_MS
    print(f"{args.db:<9} {args.disks} disks, {result['runs']} runs, {result['rows']} disk rows rendered: "
          f"median {result['median']:.1f} ms, p95 {result['p95']:.1f} ms, max {result['max']:.1f} ms, "
          f"{result['queries']:.0f} queries per request — target median <= {TARGET_MEDIAN_MS:.0f} ms: "
          f"{'PASS' if met else 'FAIL'}")  # fmt: skip
    return verdict_status(args, met)


if __name__ == "__main__":
    sys.exit(main())
