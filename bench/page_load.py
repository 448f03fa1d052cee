"""Many people at once (issue 34): 100 signed-in people browsing the overview, disk pages and run pages while 500
runs go, through the web server as ./bw run starts it; locust sends them.

    .venv/bin/python bench/page_load.py [--db postgres|sqlite] [--users 100] [--running 500] [--disks 200]
        [--duration 60] [--web-workers 2] [--smoke] [--database-url postgres://postgres@127.0.0.1:5432/bw_page_load]

The database gets bench/overview.py's team (20 hosts, `--disks` disks, 60 days of finished runs, a result row
each), `--users` members of it, each signed in (a session of its own, made here: the bench measures pages, not
password hashing), and `--running` runs going on its disks (a disk runs one run at a time). The runs go as the
database sees them: each one's live progress written every PROGRESS_EVERY_S seconds and each host's telemetry
second stored every second, as the observation steps write them, by a thread of this process (the workers' own CPU
is not measured here: see docs/operations/sizing.md). The web server is gunicorn with
./bw run's settings (`--web-workers` processes of 4 threads). locust (bench/locust/pages.py) starts the people
over `--ramp` seconds, then its statistics start afresh and `--duration` seconds are measured: each person a page,
`--think` seconds reading it (5 to 15 by default: a person reads what a page says), the next. `--think 1,3` is a
harder test than people make; the report gives the rate the people asked for.

Targets: every kind of page p95 <= 300 ms, and no error. Exit status: 0 met, 1 missed, 2 the measurement failed,
130 interrupted.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import secrets
import subprocess
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from benchkit import (
    DEFAULT_PG_URL,
    ROOT,
    BenchError,
    Stack,
    add_database_options,
    add_smoke_option,
    configure_django,
    free_port,
    interrupt_on_signals,
    parse_args,
    run_guarded,
    say,
    spawn,
    stop_group,
    verdict_status,
    wait_for_http,
)

TARGET_P95_MS = 300.0
PROGRESS_EVERY_S = 2.0
LOCUSTFILE = ROOT / "bench" / "locust" / "pages.py"


def build(args: argparse.Namespace) -> dict[str, Any]:
    """The team, its people signed in, its runs going; what the locust people need (bench/locust/pages.py)."""
    from django.contrib.auth.models import User
    from django.test import Client
    from django.utils import timezone
    from overview import build as build_history

    from jobs.models import Disk, Membership, Run

    first, runs = build_history(args.disks, args.runs_per_day, seed=1)
    team = Membership.objects.get(user=first).team
    cookies = []
    for number in range(args.users):
        user = User.objects.create_user(f"person{number:03}")
        Membership.objects.create(user=user, team=team, role=Membership.Role.MEMBER)
        client = Client(HTTP_HOST="localhost")
        client.force_login(user)
        cookies.append(client.cookies["sessionid"].value)
    disks = list(Disk.objects.filter(team=team).order_by("pk"))
    profile = Run.objects.filter(team=team).exclude(profile=None).first().profile
    now = timezone.now()
    Run.objects.filter(team=team, state=Run.State.RUNNING).delete()  # overview's few: these replace them
    going = Run.objects.bulk_create(
        Run(disk=disks[i % len(disks)], team=team, profile=profile, profile_name=profile.name,
            parameters=profile.parameters(), state=Run.State.RUNNING, started_at=now - timedelta(seconds=i % 60),
            explanation="running", progress={"elapsed_s": 0, "expected_s": 120})
        for i in range(args.running)
    )  # fmt: skip
    finished = list(Run.objects.filter(team=team, state=Run.State.SUCCEEDED).values_list("pk", flat=True)[:500])
    return {"cookies": cookies, "disks": [d.pk for d in disks], "running": [r.pk for r in going],
            "finished": finished, "history_runs": runs}  # fmt: skip


class RunsGoing:
    """The database writes of `running` runs going: each run's progress every PROGRESS_EVERY_S, each of their
    hosts' telemetry second every second (HostSample), as the observation steps write them."""

    def __init__(self, running: list[int]) -> None:
        self.running = running
        self.stop = threading.Event()
        self.writes = 0
        self.thread = threading.Thread(target=self._loop, name="runs-going", daemon=True)

    def _loop(self) -> None:
        from django.db import connection
        from django.utils import timezone

        from jobs.models import HostSample, Run

        hosts = sorted(set(Run.objects.filter(pk__in=self.running).values_list("disk__host_id", flat=True)))
        started = time.monotonic()
        tick = 0
        try:
            while not self.stop.wait(max(0.0, started + tick - time.monotonic())):
                now = timezone.now()
                elapsed = time.monotonic() - started
                HostSample.objects.bulk_create(
                    HostSample(host_id=host, at=now, data={"cpu": {"busy": 20.0, "steal": 0.0}}) for host in hosts
                )
                self.writes += len(hosts)
                # A run's progress every PROGRESS_EVERY_S: a share of them each second.
                share = max(1, round(len(self.running) / PROGRESS_EVERY_S))
                start = (tick * share) % max(1, len(self.running))
                for pk in self.running[start : start + share]:
                    Run.objects.filter(pk=pk).update(
                        heartbeat_at=now,
                        progress={"read_iops": 4000.0, "iops_at_s": round(elapsed, 1), "elapsed_s": round(elapsed),
                                  "expected_s": 120},
                    )  # fmt: skip
                    self.writes += 1
                tick += 1
        finally:
            connection.close()


def run_locust(args: argparse.Namespace, url: str, data_path: Path, stack: Stack) -> list[dict[str, str]]:
    """locust headless over the ramp and the measured seconds; its statistics' rows (per page and Aggregated)."""
    prefix = stack.tmp / "locust"
    argv = [sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), "--headless", "--host", url,
            "-u", str(args.users), "-r", str(max(1, round(args.users / max(args.ramp, 1)))),
            "-t", f"{round(args.ramp + args.duration)}s", "--reset-stats", "--csv", str(prefix), "--only-summary",
            "--stop-timeout", "5", "--loglevel", "WARNING"]  # fmt: skip
    env = dict(os.environ, BENCH_PAGES=str(data_path), BENCH_THINK=args.think)
    with (stack.tmp / "locust.log").open("wb") as log:
        limit = args.ramp + args.duration + 120
        done = subprocess.run(argv, env=env, stdout=log, stderr=subprocess.STDOUT, timeout=limit, check=False)
    stats = Path(f"{prefix}_stats.csv")
    if not stats.exists():
        tail = (stack.tmp / "locust.log").read_text(errors="replace")[-2000:]
        raise BenchError(f"locust wrote no statistics (exit status {done.returncode}):\n{tail}")
    with stats.open() as handle:
        return list(csv.DictReader(handle))


def measure(args: argparse.Namespace, stack: Stack) -> dict[str, Any]:
    from cryptography.fernet import Fernet

    # Set before Django starts here, so this process and gunicorn read the same settings (sessions are signed).
    os.environ["DJANGO_SECRET_KEY"] = secrets.token_urlsafe(50)
    os.environ["BENCHWEB_FIELD_KEYS"] = Fernet.generate_key().decode()
    configure_django(stack, args.db, args.database_url)
    say(f"[{args.db}] building {args.disks} disks' history, {args.users} people and {args.running} runs going ...")
    t0 = time.perf_counter()
    data = build(args)
    say(f"built in {time.perf_counter() - t0:.1f} s ({data['history_runs']:,} runs of history)")
    data_path = stack.tmp / "pages.json"
    data_path.write_text(json.dumps(data))
    port = free_port()
    argv = [sys.executable, "-m", "gunicorn", "benchweb.wsgi:application", "--bind", f"127.0.0.1:{port}",
            "--workers", str(args.web_workers), "--threads", "4", "--graceful-timeout", "5",
            "--no-control-socket"]  # fmt: skip
    server = spawn(argv, stack.tmp / "gunicorn.log", dict(os.environ))
    going = RunsGoing(data["running"])
    try:
        wait_for_http(f"http://127.0.0.1:{port}/healthz", server, 60, stack.tmp / "gunicorn.log")
        going.thread.start()
        say(f"{args.users} people over {args.ramp:g} s, then {args.duration:g} s measured ...")
        load_before = os.getloadavg()
        rows = run_locust(args, f"http://127.0.0.1:{port}", data_path, stack)
        load_after = os.getloadavg()
    finally:
        going.stop.set()
        if going.thread.is_alive():
            going.thread.join(timeout=10)
        stop_group(server)
    return {"rows": rows, "writes": going.writes, "load": (load_before, load_after), "users": args.users,
            "running": args.running, "db": args.db, "think": args.think, "duration": args.duration}  # fmt: skip


def report(r: dict[str, Any]) -> bool:
    met = True
    total = next((int(row["Request Count"]) for row in r["rows"] if row["Name"] == "Aggregated"), 0)
    print(f"[{r['db']}] {r['users']} people reading {r['think']} s a page ({total / r['duration']:.1f} requests/s), "
          f"{r['running']} runs going ({r['writes']:,} database writes for them); "
        f"load {r['load'][0][0]:.1f} -> {r['load'][1][0]:.1f}")  # fmt: skip
    for row in r["rows"]:
        count, failures = int(row["Request Count"]), int(row["Failure Count"])
        p95 = float(row["95%"]) if row["95%"] not in ("", "N/A") else float("nan")
        ok = count > 0 and failures == 0 and p95 <= TARGET_P95_MS
        met = met and ok
        median, top = float(row["Median Response Time"]), float(row["Max Response Time"])
        print(f"  {row['Name']:<22} {count:6d} requests, {failures} failed, median {median:.0f} ms, p95 {p95:.0f} ms, "
            f"max {top:.0f} ms  {'MET' if ok else 'MISSED'}")  # fmt: skip
    print(f"target: each page p95 <= {TARGET_P95_MS:.0f} ms and no error: {'MET' if met else 'MISSED'}")
    return met


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_database_options(
        parser, DEFAULT_PG_URL.replace("benchweb_bench", "bw_page_load"), choices=("postgres", "sqlite")
    )
    parser.add_argument("--users", type=int, default=100, help="people browsing at once (default 100)")
    parser.add_argument("--running", type=int, default=500, help="runs going meanwhile (default 500)")
    parser.add_argument(
        "--disks",
        type=int,
        default=500,
        help="the team's disks, at least one a run going: a disk runs one run at a time (default 500)",
    )
    parser.add_argument("--runs-per-day", type=int, default=2, help="finished runs a disk a day, 60 days (default 2)")
    parser.add_argument("--ramp", type=float, default=20.0, help="seconds to start the people (default 20)")
    parser.add_argument("--duration", type=float, default=60.0, help="measured seconds (default 60)")
    parser.add_argument("--web-workers", type=int, default=2, help="gunicorn processes, as ./bw run (default 2)")
    parser.add_argument("--think", default="5,15", help="MIN,MAX seconds a person reads a page (default 5,15)")
    add_smoke_option(parser, users=3, running=5, disks=5, runs_per_day=1, ramp=1.0, duration=3.0, web_workers=1,
                     think="0.5,1")  # fmt: skip
    args = parse_args(parser, argv)
    if min(args.users, args.running, args.disks, args.runs_per_day, args.web_workers) < 1 or args.duration <= 0:
        parser.error("need --users, --running, --disks, --runs-per-day and --web-workers >= 1, --duration > 0")
    think = args.think.split(",")
    if (
        len(think) != 2
        or not all(part.replace(".", "", 1).isdigit() for part in think)
        or float(think[0]) > float(think[1])
    ):
        parser.error("--think is MIN,MAX seconds, e.g. 5,15")
    if args.running > args.disks:
        parser.error("need --disks >= --running: a disk runs one run at a time")
    interrupt_on_signals()
    stack = Stack("benchweb-page-load-")
    status, result = run_guarded("page_load", stack, lambda: measure(args, stack))
    if result is None:
        return status
    return verdict_status(args, report(result))


if __name__ == "__main__":
    sys.exit(main())
