"""What exporting a disk's 100,000 runs as CSV costs, and its compliance report, on SQLite or PostgreSQL.

    .venv/bin/python bench/runs_export.py [--db sqlite|postgres] [--runs 100000]
        [--database-url postgres://postgres@127.0.0.1:5432/benchweb_exportbench]

The disk and its runs are bench/chart_endpoint.py's (one custom 40,000 IOPS disk, six profiles over two years),
built the same way. A logged-in Django test Client then asks GET /runs/export.csv?disk=<pk> and reads the
streamed answer piece by piece, as a download would, counting the rows; then once more with Python's
allocations traced (tracemalloc), so that the peak says whether the runs were held in memory (they must not
be: a few MB, not the ~1 GB the runs' summaries take as Python objects). Then GET /disks/<pk>/report/?period=all,
timed. Targets: every run exported, peak traced memory <= 50 MB. Exit status: 0 met, 1 missed, 2 the
measurement failed.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import tracemalloc
from typing import Any

import chart_endpoint
from benchkit import (
    PG_SERVER,
    BenchError,
    Stack,
    add_database_options,
    add_smoke_option,
    configure_django,
    parse_args,
    run_guarded,
    say,
    server_version,
    verdict_status,
)

DEFAULT_PG_URL = f"{PG_SERVER}/benchweb_exportbench"
PEAK_MB = 50.0


def measure(args: argparse.Namespace, stack: Stack) -> dict[str, Any]:
    configure_django(stack, args.db, args.database_url)
    from django.test import Client

    say(f"[{args.db}] creating {args.runs:,} runs ...")
    user, disk_pk, _ = chart_endpoint.build(args.runs, 2_000, 1)
    client = Client(HTTP_HOST="localhost")
    client.force_login(user)
    began = time.perf_counter()
    lines = _export(client, disk_pk)
    export_s = time.perf_counter() - began
    # Again with the allocations traced, which makes Python several times slower: the time is the first pass's.
    tracemalloc.start()
    _export(client, disk_pk)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    began = time.perf_counter()
    report = client.get(f"/disks/{disk_pk}/report/?period=all")
    report_s = time.perf_counter() - began
    if report.status_code != 200:
        raise BenchError(f"the report answered {report.status_code}: {report.content[:300]!r}")
    return {"server": server_version(), "rows": lines - 1, "export_s": export_s, "peak_mb": peak / 2**20,
            "report_s": report_s, "report_kb": len(report.content) / 1024, "load": os.getloadavg()[0]}  # fmt: skip


def _export(client: Any, disk_pk: int) -> int:
    """The export read as a download reads it; its line count."""
    response = client.get(f"/runs/export.csv?disk={disk_pk}")
    if response.status_code != 200 or not response.streaming:
        raise BenchError(f"the export answered {response.status_code}, streaming={response.streaming}")
    return sum(piece.count(b"\r\n") for piece in response.streaming_content)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_database_options(parser, DEFAULT_PG_URL, choices=("sqlite", "postgres"))
    parser.add_argument("--runs", type=int, default=100_000)
    add_smoke_option(parser, runs=300)
    args = parse_args(parser, argv)
    stack = Stack(f"benchweb-export-{args.db}-")
    status, r = run_guarded(f"runs export [{args.db}]", stack, lambda: measure(args, stack))
    if r is None:
        return status
    met = r["rows"] == args.runs and r["peak_mb"] <= PEAK_MB
    print(f"{r['server']}: GET /runs/export.csv?disk=  {r['rows']:,} rows in {r['export_s']:.1f} s "
          f"({r['rows'] / r['export_s']:,.0f} rows/s), peak traced memory {r['peak_mb']:.1f} MB "
          f"(target <= {PEAK_MB:.0f} MB)  {'MET' if met else 'MISSED'}")  # fmt: skip
    print(f"{'':<{len(r['server'])}}  GET /disks/<pk>/report/?period=all  {r['report_s'] * 1000:.0f} ms, "
          f"{r['report_kb']:.0f} kB; load average {r['load']:.1f}")  # fmt: skip
    return verdict_status(args, met)


if __name__ == "__main__":
    sys.exit(main())
