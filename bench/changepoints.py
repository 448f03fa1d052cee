"""What change points cost on a disk with 100,000 runs: detecting them, and reading them through the API and
the chart endpoint, on SQLite and PostgreSQL.

    .venv/bin/python bench/changepoints.py [--db sqlite|postgres|both] [--runs 100000] [--requests 20]
        [--database-url postgres://postgres@127.0.0.1:5432/benchweb_changebench]

The disk is bench/chart_endpoint.py's (six profiles over two years, every twentieth run of a profile a
noisy-neighbour dip at 30-60 %), built the same way; then the last LOWERED results of one profile fall by 30 % (its IOPS
and bandwidth), a known level shift inside the window detection reads (jobs.models.changes.WINDOW). Reported:

- detection over the whole disk (ChangePoint.refresh_disk: every profile's last WINDOW runs), as after a bulk
  import, and what it found;
- what recording one run adds (ChangePoint.refresh of one profile, as RunResult.record triggers it): median
  and p95 of --requests calls;
- the marks the disk chart gets (jobs.models.changes.chart_marks), alone;
- GET /api/v1/change-points/?disk=<pk> and GET /disks/<pk>/series.json?range=all (which now carries the
  marks; the rest of its time is bench/chart_endpoint.py's): median and p95 wall time of --requests requests
  after --warmup, through the whole middleware stack.

Target: both GETs, the marks and one refresh with a median <= 150 ms (the chart endpoint's budget). Exit status: 0 met,
1 missed, 2 the measurement failed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Any

from benchkit import (
    PG_SERVER,
    BenchError,
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
)
from chart_endpoint import PROFILES, build

DEFAULT_PG_URL = f"{PG_SERVER}/benchweb_changebench"
TARGET_MEDIAN_MS = 150.0
STEP = 0.7  # the known shift: the first profile's last LOWERED results at 70 %
LOWERED = 400


def _shift_last_runs(disk_pk: int) -> int:
    """Lower the first profile's last LOWERED results (at most half of them) by STEP; the id of its first
    lowered run."""
    from django.db.models import F

    from jobs.models import RunResult

    results = RunResult.objects.filter(disk_id=disk_pk, profile_name=PROFILES[0][0]).order_by("finished_ms")
    ids = list(results.values_list("run_id", flat=True))
    lowered = ids[-min(LOWERED, len(ids) // 2) :]  # half of them at most: a --smoke run has few
    RunResult.objects.filter(run_id__in=lowered).update(
        total_iops=F("total_iops") * STEP, read_iops=F("read_iops") * STEP, bw_bytes_per_s=F("bw_bytes_per_s") * STEP
    )
    return lowered[0]


def _timed(work: Any, times: int) -> list[float]:
    spent = []
    for _ in range(times):
        began = time.perf_counter()
        work()
        spent.append((time.perf_counter() - began) * 1000)
    return spent


def measure(args: argparse.Namespace, stack: Stack) -> dict[str, Any]:
    configure_django(stack, args.db, args.database_url)
    from django.test import Client

    from jobs.models import ChangePoint, Disk, changes

    say(f"[{args.db}] creating {args.runs:,} runs ...")
    user, disk_pk, _ = build(args.runs, args.raw_bytes, args.seed)
    first_lowered = _shift_last_runs(disk_pk)
    disk = Disk.objects.get(pk=disk_pk)
    began = time.perf_counter()
    ChangePoint.refresh_disk(disk)
    whole_disk_ms = (time.perf_counter() - began) * 1000
    found = list(ChangePoint.objects.filter(disk=disk).values("profile_name", "metric", "run_id", "change_percent"))
    profile = ChangePoint.objects.filter(disk=disk).values_list("profile_id", "profile_name").first()
    if profile is None:
        raise BenchError("the known 30 % step was not found")
    refresh_ms = _timed(lambda: ChangePoint.refresh(disk, *profile), args.requests)
    marks_ms = _timed(lambda: changes.chart_marks(disk, None, None), args.requests)
    client = Client(HTTP_HOST="localhost")
    client.force_login(user)
    return {
        "db": args.db,
        "server": server_version(),
        "runs": args.runs,
        "whole_disk_ms": whole_disk_ms,
        "found": found,
        "first_lowered_run": first_lowered,
        "refresh_ms": refresh_ms,
        "marks_ms": marks_ms,
        "api_ms": _ask(client, f"/api/v1/change-points/?disk={disk_pk}", args),
        "chart_ms": _ask(client, f"/disks/{disk_pk}/series.json?range=all", args),
        "load_average": os.getloadavg(),
        "cpus": os.cpu_count(),
    }


def _ask(client: Any, url: str, args: argparse.Namespace) -> list[float]:
    def ask() -> None:
        response = client.get(url)
        if response.status_code != 200:
            raise BenchError(f"{url} answered {response.status_code}: {response.content[:300]!r}")

    for _ in range(args.warmup):
        ask()
    return _timed(ask, args.requests)


def _times(name: str, times: list[float]) -> tuple[str, bool]:
    median = statistics.median(times)
    ok = median <= TARGET_MEDIAN_MS
    line = f"{name:<44} median {median:7.1f} ms, p95 {p95_rounded(times):7.1f} ms ({len(times)} times)"
    return f"{line}  {'MET' if ok else 'MISSED'}", ok


def report(results: list[dict[str, Any]]) -> bool:
    met = True
    print(f"Change points on a disk of six profiles; target: median <= {TARGET_MEDIAN_MS:.0f} ms")
    for r in results:
        print(f"  {r['server']}, {r['runs']:,} runs (load average {r['load_average'][0]:.1f} on {r['cpus']} CPUs)")
        print(f"    detection over the whole disk (refresh_disk): {r['whole_disk_ms']:.0f} ms; found:")
        for change in r["found"]:
            known = " (the known step)" if change["run_id"] == r["first_lowered_run"] else ""
            print(f"      {change['profile_name']}: {change['metric']} {change['change_percent']:+.1f} % "
                  f"at run {change['run_id']}{known}")  # fmt: skip
        for name, key in (
            ("one recorded run's refresh", "refresh_ms"),
            ("GET /api/v1/change-points/?disk=", "api_ms"),
            ("the chart's marks alone (chart_marks)", "marks_ms"),
            ("GET /disks/<pk>/series.json?range=all", "chart_ms"),
        ):
            line, ok = _times(name, r[key])
            met = met and ok
            print(f"    {line}")
    return met


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_database_options(parser, DEFAULT_PG_URL)
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--raw-bytes", type=int, default=2_000, help="raw output per run (default 2,000)")
    parser.add_argument("--requests", type=int, default=20, help="timed requests and refreshes (default 20)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed requests first (default 2)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    add_smoke_option(parser, db="sqlite", runs=300, raw_bytes=100, requests=2, warmup=0)
    args = parse_args(parser, argv)
    if args.runs < 1 or args.requests < 1 or args.warmup < 0:
        parser.error("need --runs >= 1, --requests >= 1, --warmup >= 0")
    interrupt_on_signals()
    return measure_and_report(__file__, argv, args, "changepoints", measure, report)


if __name__ == "__main__":
    sys.exit(main())
