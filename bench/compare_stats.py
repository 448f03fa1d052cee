"""How fast the statistics answer for a disk with 100,000 runs, on SQLite (or PostgreSQL).

    .venv/bin/python bench/compare_stats.py [--db sqlite|postgres] [--runs 100000] [--requests 20]

The disk and its runs are chart_endpoint.py's (six profiles over two years, result rows and days written in
bulk). A logged-in Django test Client then asks, --requests times each after two untimed requests:

- GET /api/v1/compare/stats/?disk=<pk>&split=<a year ago>&profile=4k randread QD64: the disk before against after
  a moment, Mann-Whitney U and the Hodges-Lehmann CI over the newest 500 runs of each set (the CI sorts
  500 x 500 pairwise differences);
- GET /compare/distributions.json?disks=<pk>&profile=4k randread QD64: the disk's latest run of that
  profile, as the Compare page draws it.

Target: median <= 150 ms each, the disk chart endpoint's budget. Exit status: 0 met, 1 missed, 2 failed.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from datetime import timedelta
from typing import Any

from benchkit import (
    DATABASES,
    BenchError,
    Stack,
    add_database_options,
    add_smoke_option,
    configure_django,
    interrupt_on_signals,
    parse_args,
    run_guarded,
    say,
    verdict_status,
)
from chart_endpoint import DEFAULT_PG_URL, PROFILES, TARGET_MEDIAN_MS, build


def measure(args: argparse.Namespace, stack: Stack) -> dict[str, Any]:
    configure_django(stack, args.db, args.database_url)
    from django.test import Client
    from django.utils import timezone

    say(f"[{args.db}] creating {args.runs:,} runs ...")
    user, disk_pk, _ = build(args.runs, 0, args.seed)
    client = Client(HTTP_HOST="localhost")
    client.force_login(user)
    split = (timezone.now() - timedelta(days=365)).date().isoformat()
    stats_url = f"/api/v1/compare/stats/?disk={disk_pk}&split={split}&profile={PROFILES[0][0]}"
    return {
        "db": args.db,
        "stats": _ask(client, stats_url, args),
        "distributions": _ask(client, f"/compare/distributions.json?disks={disk_pk}&profile={PROFILES[0][0]}", args),
    }


def _ask(client: Any, url: str, args: argparse.Namespace) -> list[float]:
    def ask() -> float:
        began = time.perf_counter()
        response = client.get(url)
        if response.status_code != 200:
            raise BenchError(f"{url} answered {response.status_code}: {response.content[:300]!r}")
        return (time.perf_counter() - began) * 1000

    for _ in range(2):
        ask()
    return [ask() for _ in range(args.requests)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_database_options(parser, DEFAULT_PG_URL, choices=DATABASES)
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    add_smoke_option(parser, runs=300, requests=2)
    args = parse_args(parser, argv)
    interrupt_on_signals()
    stack = Stack(f"benchweb-stats-{args.db}-")
    status, result = run_guarded(f"compare_stats [{args.db}]", stack, lambda: measure(args, stack))
    if result is None:
        return status
    met = True
    for name in ("stats", "distributions"):
        times = result[name]
        median = statistics.median(times)
        met = met and median <= TARGET_MEDIAN_MS
        print(f"{result['db']} {name:<13} median {median:6.1f} ms, max {max(times):6.1f} ms ({len(times)} requests)")
    return verdict_status(args, met)


if __name__ == "__main__":
    sys.exit(main())
