"""How fast a sweep's page answers on a disk with 1,000 stored sweeps, on SQLite and PostgreSQL (issue 31).

    .venv/bin/python bench/sweep_page.py [--db sqlite|postgres|both] [--sweeps 1000] [--requests 20]
        [--database-url postgres://postgres@127.0.0.1:5432/benchweb_sweepbench]

Each database gets a fresh, migrated benchweb database holding one team, one disk (8 x 5,000 IOPS striped:
40,000 IOPS) and --sweeps finished sweeps of one QD sweep profile (iodepth 1-256 x2: nine points) spread over
three years: every point a finished member run with a summary shaped like the fio parser's (IOPS that level off
near the limit, p99 that rises past the knee), every sweep's own result computed as a sweep's end computes it
(jobs.sets.summary.sweep_result) and its knee recorded as the disk's series (RunResult), written in bulk.

A logged-in Django test Client then asks each page of the newest sweep (--urls: the set page and the JSON its
charts draw from; {pk} is the sweep's id) --requests times after two untimed requests, through the whole
middleware stack, and reports the median and the maximum. Target: median <= 150 ms each. Exit status: 0 met,
1 missed, 2 the measurement failed.
"""

from __future__ import annotations

import argparse
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
    parse_args,
    say,
    server_version,
    time_gets,
)

DEFAULT_PG_URL = f"{PG_SERVER}/benchweb_sweepbench"
TARGET_MEDIAN_MS = 150.0
DEPTHS = (1, 2, 4, 8, 16, 32, 64, 128, 256)
URLS = ("/sets/{pk}/", "/sets/{pk}/series.json")


def _summary(rng: random.Random, depth: int) -> dict[str, Any]:
    """One point of a QD sweep: IOPS that grow with depth until they level off near 40,000; p99 that rises past
    the knee."""
    iops = min(40_000.0, 2_600.0 * depth) * rng.uniform(0.96, 1.04)
    p50 = 180.0 * max(1.0, depth / 16) * rng.uniform(0.9, 1.1)
    direction = {"iops": iops, "bw_bytes_per_s": iops * 4096,
                 "clat_us": {"p50": p50, "p99": p50 * 3, "p99_9": p50 * 6, "mean": p50 * 1.1}}  # fmt: skip
    return {"tool": "fio", "tool_version": "fio-3.33", "total": {"iops": iops, "bw_bytes_per_s": iops * 4096},
            "read": direction, "write": None, "block_size_bytes": 4096, "read_percent": 100, "direct": True,
            "runtime_s": 60.0}  # fmt: skip


def build(n_sweeps: int, seed: int) -> tuple[Any, int]:
    """The team's user and the newest sweep's id, with n_sweeps finished sweeps over three years."""
    from django.contrib.auth.models import User
    from django.utils import timezone

    from jobs.models import Disk, Host, Profile, Run, RunResult, RunSet
    from jobs.sets import requesting, summary
    from jobs.teams import membership as teams

    rng = random.Random(seed)
    user = User.objects.create_user("bench")
    team = teams.place_new_user(user).team
    host = Host.objects.create(team=team, name="ultra-vm", address="10.0.0.5", username="bench")
    disk = Disk.objects.create(host=host, label="lvm-8x-ultra", target_path="/dev/vg0/bench", kind="block",
                               disk_type="custom", spec_iops=40_000, spec_bytes_per_s=8 * 140_000_000)  # fmt: skip
    profile = Profile.objects.create(team=team, name="QD sweep", rw="randread", runtime_s=60,
                                     sweep_axes={"iodepth": "1-256 x2"})  # fmt: skip
    plan = requesting.plan_json(profile.sweep())
    snapshot = disk.limits(block_size=4096).as_dict()
    now = timezone.now()
    step = timedelta(days=3 * 365) / n_sweeps
    for first in range(0, n_sweeps, 100):
        sets, runs = [], []
        for index in range(first, min(first + 100, n_sweeps)):
            ended = now - step * (n_sweeps - index)
            sets.append(RunSet(team=team, disk=disk, profile=profile, profile_name=profile.name, plan=plan,
                               base_parameters=profile.parameters(), state="succeeded", explanation="finished",
                               started_at=ended - timedelta(minutes=10), finished_at=ended))  # fmt: skip
        RunSet.objects.bulk_create(sets)
        for run_set in sets:
            assert run_set.finished_at is not None
            for i, depth in enumerate(DEPTHS):
                at = run_set.finished_at - timedelta(minutes=len(DEPTHS) - i)
                runs.append(Run(team=team, disk=disk, profile=profile, profile_name=profile.name,
                                parameters=profile.at_point({"iodepth": depth}).parameters(), trigger="schedule",
                                state="succeeded", explanation="finished", started_at=at - timedelta(minutes=1),
                                finished_at=at, summary=_summary(rng, depth), limits_snapshot=snapshot,
                                run_set=run_set, set_index=i, set_point={"iodepth": depth}))  # fmt: skip
        Run.objects.bulk_create(runs)
        by_set: dict[int, list[Any]] = {}
        for run in runs:
            by_set.setdefault(run.run_set_id, []).append(run)
        knees = []
        for run_set in sets:
            run_set.result = summary.sweep_result(run_set, by_set[run_set.pk])
            for run_id, name in summary.knee_series(run_set.profile_name, run_set.result):
                knee = next(run for run in by_set[run_set.pk] if run.pk == run_id)
                knees.append(RunResult.of(knee))
                knees[-1].profile_name = name
        RunSet.objects.bulk_update(sets, ["result"])
        RunResult.objects.bulk_create(knees)
    newest = RunSet.objects.filter(disk=disk).order_by("-finished_at").values_list("pk", flat=True).first()
    assert newest is not None
    return user, newest


def measure(args: argparse.Namespace, stack: Stack) -> dict[str, Any]:
    configure_django(stack, args.db, args.database_url)
    from django.test import Client

    say(f"[{args.db}] storing {args.sweeps:,} sweeps of {len(DEPTHS)} points ...")
    began = time.monotonic()
    user, pk = build(args.sweeps, args.seed)
    say(f"[{args.db}] stored in {time.monotonic() - began:.1f} s")
    client = Client(HTTP_HOST="localhost")
    client.force_login(user)
    times = {url: time_gets(client, url.format(pk=pk), 2, args.requests)[0] for url in args.urls}
    return {"server": server_version(), "sweeps": args.sweeps, "times": times}


def report(results: list[dict[str, Any]]) -> bool:
    met = True
    print(f"a sweep's pages on a disk with many sweeps   target: median <= {TARGET_MEDIAN_MS:.0f} ms each")
    for result in results:
        for url, times in result["times"].items():
            median = statistics.median(times)
            ok = median <= TARGET_MEDIAN_MS
            met = met and ok
            print(f"  {result['server']:<22} {url:<26} median {median:6.1f} ms, max {max(times):6.1f} ms "
                  f"({len(times)} requests, {result['sweeps']:,} sweeps)  {'MET' if ok else 'MISSED'}")  # fmt: skip
    return met


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_database_options(parser, DEFAULT_PG_URL)
    parser.add_argument("--sweeps", type=int, default=1000)
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--urls", nargs="+", default=list(URLS), help="the pages asked; {pk} is the sweep's id")
    add_smoke_option(parser, sweeps=20, requests=2)
    args = parse_args(parser, argv)
    interrupt_on_signals()
    return measure_and_report(__file__, sys.argv[1:] if argv is None else argv, args, "sweep_page", measure, report)


if __name__ == "__main__":
    sys.exit(main())
