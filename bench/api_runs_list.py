"""How fast the REST API lists runs under gunicorn, with 1,000,000 runs and 20 concurrent clients, on PostgreSQL
(or SQLite).

    .venv/bin/python bench/api_runs_list.py [--db postgres|sqlite] [--runs 1000000] [--clients 20] [--duration 60]
        [--warmup 10] [--workers 5] [--threads 1] [--think-ms 0] [--solo-requests 200] [--hosts 20]
        [--disks-per-host 10] [--profile] [--smoke] [--database-url postgres://postgres@127.0.0.1:5432/benchweb_bench_api]

A fresh, migrated database (PostgreSQL: the one named, which must not exist beforehand, dropped again at the end,
also on error or Ctrl-C; SQLite: a file in a temporary directory) gets one team with --hosts hosts (default 20)
of --disks-per-host disks (default 10) of catalog types, four profiles and a schedule per profile, and a second
team with a tenth as many hosts, so that team scoping has rows to keep out. --runs finished runs (default
1,000,000) are spread uniformly over all disks (the first team holds ~91 % of them) and over the last 365 days,
in time order as a live site inserts them, as a finished run stores them: 85 % scheduled, 10 % manual, 5 % API;
2 % failed; the summary a real fio 3.33 JSON parses to (tests/fixtures/fio-3.33-randrw.json, total IOPS varied
per run), the profile's parameters and job file, the disk's limits snapshot, progress, timestamps; every other
column of the run table at its model default (so a column added later does not break the set-up). On PostgreSQL
they are made by one INSERT ... SELECT ... FROM generate_series in the database; the table's indexes that back
no constraint are dropped for the INSERT and built again after it (the same definitions; faster than keeping
them up to date row by row), then VACUUM (ANALYZE), as autovacuum would have done on a live table (~160 s for
1,000,000 runs on the 2-CPU development machine). On SQLite they are made here and inserted in batches, then
ANALYZE. Raw output is left empty: a real run's (fio JSON every second) is compressed out of line into the
TOAST table on PostgreSQL, where it leaves an 18-byte pointer in the row, and the list never reads it. RunResult
and RunSample rows are not made either: the list endpoint and its serializer do not read them. The report says
how long each step took.

gunicorn from the venv serves that database on a free 127.0.0.1 port (--workers, default 2 x CPUs + 1;
--threads 1 means sync workers, which close the connection after every response). --clients threads, each
with an API token of its own (`Authorization: Bearer ...`) and a keep-alive http.client connection, ask in
a closed loop (--think-ms between requests, default none) for GET /api/v1/runs/?disk=<id> with a random
disk of the first team: the first page, 50 runs. Every response must be 200 with 50 results, or the
measurement failed. After --warmup seconds, --duration seconds are measured: latency p50/p95/p99/max,
throughput, and the CPU seconds per request of gunicorn, of PostgreSQL's backends of this database and of
this script (the load generator shares the machine's CPUs with both), and the load average. Before that,
one client alone makes --solo-requests requests: the service time without queueing.

Then, in this process, through Django's test client with the same token header: the SQL statements of one
request and the EXPLAIN (ANALYZE, BUFFERS) of its SELECTs on runs (EXPLAIN QUERY PLAN on SQLite), a check that
another team's disk lists nothing, and, when the target is missed (or with --profile), a cProfile of
--profile-requests requests.

Target: p95 <= 50 ms. By Little's law, 20 closed-loop clients with no think time keep 20 requests in the
system, so p95 <= 50 ms needs a mean latency well under 50 ms, i.e. >= ~400 requests/s; --think-ms 500 has
each client wait half a second between requests, as a locust user with a wait time does. Exit status: 0 met,
1 missed, 2 the measurement failed, 130 interrupted. --smoke: 800 runs on 3 disks, 2 clients for a second (the
set-up and the report work; the figures mean nothing).
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import http.client
import io
import json
import os
import pstats
import random
import secrets
import statistics
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchkit import (
    PG_SERVER,
    ROOT,
    BenchError,
    Stack,
    add_database_options,
    add_smoke_option,
    configure_django,
    free_port,
    interrupt_on_signals,
    parse_args,
    percentile,
    run_guarded,
    say,
    server_version,
    sql_shape,
    start_gunicorn,
    stop_group,
    verdict_status,
    wait_for_http,
)

DEFAULT_URL = f"{PG_SERVER}/benchweb_bench_api"
TARGET_P95_MS = 50.0
PAGE_SIZE = 50
HOSTS, DISKS_PER_HOST = 20, 10  # the defaults of --hosts and --disks-per-host
# The second team has a tenth as many hosts (at least one), with --disks-per-host disks each.
DAYS = 365
# (name, rw, block size, runtime s)
PROFILES = (
    ("4k randread QD1 60 s", "randread", 4096, 60),
    ("4k randrw 60 s", "randrw", 4096, 60),
    ("64k seq read 120 s", "read", 65536, 120),
    ("1M seq write 300 s", "write", 2**20, 300),
)
DISK_TYPES = (("aws-gp3", 500, {}), ("aws-io2", 1000, {"spec_iops": 20000}), ("azure-premium-ssd", 1024, {}),
              ("gcp-pd-ssd", 500, {}), ("custom", None, {"spec_iops": 50000}))  # fmt: skip
FIO_FIXTURE = ROOT / "tests/fixtures/fio-3.33-randrw.json"

# One row per run, made in the database. %(n)s runs, uniformly over the disks of bench_disk and the profiles
# of each disk's team (bench_profile), a run every 365 days / n until 10 minutes ago: ids and created_at
# grow together, as on a live site. The constant JSON documents are parameters of the statement.
INSERT_RUNS = """
INSERT INTO jobs_run (uuid, team_id, disk_id, profile_id, profile_name, parameters, schedule_id, fire_time,
    trigger, created_by_id, state, explanation, created_at, not_before, queued_at, started_at, finished_at,
    progress, heartbeat_at, cancel_requested, command, remote_dir, remote_pid, exit_status, raw_output,
    raw_stderr, summary, limits_snapshot, destructive, warnings/*other columns*/)
SELECT r.u, d.team_id, d.disk_id, p.profile_id, p.name, p.parameters,
    CASE WHEN r.kind < 0.85 THEN p.schedule_id END,
    CASE WHEN r.kind < 0.85 THEN r.t END,
    CASE WHEN r.kind < 0.85 THEN 'schedule' WHEN r.kind < 0.95 THEN 'manual' ELSE 'api' END,
    CASE WHEN r.kind >= 0.85 THEN %(user)s::integer END,
    CASE WHEN r.failed THEN 'failed' ELSE 'succeeded' END,
    CASE WHEN r.failed THEN 'fio exited with status 1: fio: io_u error on file: Input/output error'
         ELSE 'finished' END,
    r.t + interval '40 ms', r.t, r.t + interval '150 ms', r.t + interval '1.2 s',
    r.t + make_interval(secs => p.runtime_s + 3.5),
    %(progress)s::jsonb || jsonb_build_object('elapsed_s', p.runtime_s),
    r.t + make_interval(secs => p.runtime_s + 3.5), false, p.command,
    '/var/tmp/benchweb/run-' || r.u::text, 20000 + (r.g %% 30000)::integer,
    CASE WHEN r.failed THEN 1 ELSE 0 END, '', '',
    CASE WHEN r.failed THEN NULL
         ELSE jsonb_set(%(summary)s::jsonb, '{total,iops}', to_jsonb(round((800 + 400 * r.kind)::numeric, 1)))
    END,
    d.limits_snapshot, false, '[]'::jsonb/*other values*/
FROM (
    SELECT g, gen_random_uuid() AS u,
        now() - interval '10 minutes' - (%(n)s - g) * (make_interval(days => %(days)s) / %(n)s) AS t,
        1 + floor(random() * %(disks)s)::integer AS disk_index,
        floor(random() * %(profiles)s)::integer AS profile_index,
        random() AS kind, random() < 0.02 AS failed
    FROM generate_series(1, %(n)s) AS g
    OFFSET 0  -- a fence: inlined, each use of r.kind would draw a random() of its own
) AS r
JOIN bench_disk AS d ON d.i = r.disk_index
JOIN bench_profile AS p ON p.team_id = d.team_id AND p.k = r.profile_index
"""


class Failed(BenchError):
    """Responses that were not 200 with a full page: the load was not the one to measure."""


# ----------------------------------------------------------------------------------------- the fleet


@dataclass
class Fleet:
    team_disks: list[int]
    other_disks: list[int]
    tokens: list[str]  # one per client, of the first team
    profile_token: str  # for the in-process requests
    other_token: str  # the second team's
    runs: int = 0
    runs_by_team: dict[str, int] = field(default_factory=dict)
    heap_mb: float = 0.0
    indexes_mb: float = 0.0
    toast_mb: float = 0.0
    correlation: float | None = None
    build_s: dict[str, float] = field(default_factory=dict)


def other_hosts(hosts: int) -> int:
    return max(1, hosts // 10)


def build_fleet(n_runs: int, clients: int, seed: int, hosts: int, disks_per_host: int) -> Fleet:
    from django.contrib.auth.models import User
    from django.db import connection

    from jobs import runners
    from jobs.api.models import ApiToken
    from jobs.imports import importing
    from jobs.models import Disk, Host, Membership, Profile, Schedule, Team
    from jobs.runs import storing

    rng = random.Random(seed)
    t0 = time.perf_counter()
    user, other_user = User.objects.create_user("bench"), User.objects.create_user("other")
    team, other = Team.objects.create(name="bench team"), Team.objects.create(name="other team")
    Membership.objects.create(user=user, team=team, role=Membership.Role.MEMBER)
    Membership.objects.create(user=other_user, team=other, role=Membership.Role.MEMBER)
    disk_rows, profile_rows = [], []
    for t, n_hosts in ((team, hosts), (other, other_hosts(hosts))):
        hosts = Host.objects.bulk_create(
            Host(team=t, name=f"{t.pk}-vm{h:02}", address=f"10.{t.pk}.0.{h + 1}", username="bench", site="dc1")
            for h in range(n_hosts)
        )
        made = []
        for h, host in enumerate(hosts):
            for d in range(disks_per_host):
                kind, size, extra = DISK_TYPES[rng.randrange(len(DISK_TYPES))]
                made.append(Disk(host=host, team=t, label=f"h{h:02}d{d}", target_path=f"/data/d{d}",
                                 disk_type=kind, size=size, **extra))  # fmt: skip
        for disk in Disk.objects.bulk_create(made):
            disk_rows.append((disk.pk, t.pk, json.dumps(disk.limits_snapshot(4096))))
        for k, (name, rw, block_size, runtime) in enumerate(PROFILES):
            profile = Profile.objects.create(team=t, name=name, rw=rw, block_size_bytes=block_size,
                                             runtime_s=runtime, size_bytes=2**30)  # fmt: skip
            schedule = Schedule.objects.create(team=t, name=f"nightly {name}", cron=f"{k * 10} 2 * * *")
            params = profile.parameters()
            run_dir = "/var/tmp/benchweb/run-00000000-0000-0000-0000-000000000000"  # noqa: S108  (the host's)
            command = runners.for_parameters(params).build(params, "/data/d0", Disk.Kind.DIRECTORY, run_dir, "x")[2]
            profile_rows.append((t.pk, k, profile.pk, name, json.dumps(params), command, runtime, schedule.pk))
    tokens = [ApiToken.issue(user, team, f"bench client {i}")[1] for i in range(clients)]
    profile_token = ApiToken.issue(user, team, "bench profile")[1]
    other_token = ApiToken.issue(other_user, other, "other team")[1]

    summary = storing.stored_summary(importing.parse_import(FIO_FIXTURE.read_text()).summary)
    progress = {"eta_s": 0, "read_iops": 612.0, "write_iops": 608.5}
    fleet = Fleet(
        team_disks=[pk for pk, team_pk, _ in disk_rows if team_pk == team.pk],
        other_disks=[pk for pk, team_pk, _ in disk_rows if team_pk == other.pk],
        tokens=tokens, profile_token=profile_token, other_token=other_token,
    )  # fmt: skip
    fleet_s = time.perf_counter() - t0
    if connection.vendor == "postgresql":
        _insert_runs_postgres(fleet, n_runs, user.pk, disk_rows, profile_rows, summary, progress)
    else:
        _insert_runs_sqlite(fleet, n_runs, user.pk, disk_rows, profile_rows, summary, progress, rng)
    fleet.build_s = {"fleet": fleet_s, **fleet.build_s}
    with connection.cursor() as cursor:
        cursor.execute("SELECT team_id, count(*) FROM jobs_run GROUP BY team_id ORDER BY team_id")
        fleet.runs_by_team = {("first" if pk == team.pk else "second"): count for pk, count in cursor.fetchall()}
    fleet.runs = sum(fleet.runs_by_team.values())
    return fleet


def _other_columns(named: str) -> dict[str, Any]:
    """The run table's NOT NULL columns the INSERT does not name, with their model defaults as the database
    stores them: a column added later (launch_attempt, import_fingerprint ...) cannot break the INSERT."""
    from django.db import connection

    from jobs.models import Run

    listed = {name.strip() for name in named.split(",")}
    return {
        f.column: f.get_db_prep_save(f.get_default(), connection)
        for f in Run._meta.concrete_fields
        if not f.null and not f.primary_key and f.column not in listed
    }


def _insert_runs_postgres(fleet: Fleet, n_runs: int, user_pk: int, disk_rows: list[tuple[Any, ...]],
                          profile_rows: list[tuple[Any, ...]], summary: dict[str, Any],
                          progress: dict[str, Any]) -> None:  # fmt: skip
    from django.db import connection

    named = INSERT_RUNS.split("(", 1)[1].split(")", 1)[0].replace("/*other columns*/", "")
    other = _other_columns(named)
    sql = INSERT_RUNS.replace("/*other columns*/", "".join(f", {column}" for column in other))
    sql = sql.replace("/*other values*/", "".join(f", %(other_{column})s" for column in other))
    with connection.cursor() as cursor:
        cursor.execute("CREATE TEMPORARY TABLE bench_disk (i integer, disk_id bigint, team_id bigint, "
                       "limits_snapshot jsonb)")  # fmt: skip
        cursor.executemany("INSERT INTO bench_disk VALUES (%s, %s, %s, %s)",
                           [(i + 1, *row) for i, row in enumerate(disk_rows)])  # fmt: skip
        cursor.execute("CREATE TEMPORARY TABLE bench_profile (team_id bigint, k integer, profile_id bigint, "
                       "name text, parameters jsonb, command text, runtime_s integer, schedule_id bigint)")  # fmt: skip
        cursor.executemany("INSERT INTO bench_profile VALUES (%s, %s, %s, %s, %s, %s, %s, %s)", profile_rows)
        cursor.execute("ANALYZE bench_disk; ANALYZE bench_profile")
        # Filling a table is faster without its indexes, then building each once: the ones that back no
        # constraint are dropped and made again from their own definitions (names and all).
        cursor.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'jobs_run' AND indexname NOT IN "
                       "(SELECT conname FROM pg_constraint WHERE conrelid = 'jobs_run'::regclass)")  # fmt: skip
        secondary = cursor.fetchall()
        t0 = time.perf_counter()
        for name, _ in secondary:
            cursor.execute(f'DROP INDEX "{name}"')
        cursor.execute(sql, {"n": n_runs, "days": DAYS, "disks": len(disk_rows), "profiles": len(PROFILES),
                             "user": user_pk, "summary": json.dumps(summary), "progress": json.dumps(progress),
                             **{f"other_{column}": value for column, value in other.items()}})  # fmt: skip
        insert_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        for _, definition in secondary:
            cursor.execute(definition)
        index_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        cursor.execute("VACUUM (ANALYZE) jobs_run")
        vacuum_s = time.perf_counter() - t0
        cursor.execute("SELECT pg_relation_size(oid), pg_indexes_size(oid), coalesce(pg_total_relation_size("
                       "reltoastrelid), 0) FROM pg_class WHERE relname = 'jobs_run'")  # fmt: skip
        heap, indexes, toast = cursor.fetchone()
        cursor.execute("SELECT correlation FROM pg_stats WHERE tablename = 'jobs_run' AND attname = 'created_at'")
        fleet.correlation = (cursor.fetchone() or (None,))[0]
    fleet.heap_mb, fleet.indexes_mb, fleet.toast_mb = heap / 2**20, indexes / 2**20, toast / 2**20
    fleet.build_s = {"insert": insert_s, f"{len(secondary)} indexes": index_s, "vacuum analyze": vacuum_s}


def _insert_runs_sqlite(fleet: Fleet, n_runs: int, user_pk: int, disk_rows: list[tuple[Any, ...]],
                        profile_rows: list[tuple[Any, ...]], summary: dict[str, Any], progress: dict[str, Any],
                        rng: random.Random) -> None:  # fmt: skip
    """The same runs as the PostgreSQL INSERT makes, made here and inserted in batches (every column of the
    model, the ones not set here at their defaults), then ANALYZE."""
    import uuid
    from datetime import timedelta

    from django.db import connection, transaction
    from django.utils import timezone

    from jobs.models import Run

    fields = [f for f in Run._meta.concrete_fields if not f.primary_key]
    sql = (f"INSERT INTO jobs_run ({', '.join(f.column for f in fields)}) "  # noqa: S608  (the model's columns)
           f"VALUES ({', '.join(['%s'] * len(fields))})")  # fmt: skip
    defaults = {f.attname: f.get_default() for f in fields}
    profiles: dict[int, list[tuple[Any, ...]]] = {}
    for row in profile_rows:
        profiles.setdefault(row[0], []).append(row)
    end = timezone.now() - timedelta(minutes=10)
    step = timedelta(days=DAYS) / n_runs
    t0 = time.perf_counter()
    batch: list[list[Any]] = []
    with transaction.atomic(), connection.cursor() as cursor:
        for g in range(1, n_runs + 1):
            disk_pk, team_pk, limits = disk_rows[rng.randrange(len(disk_rows))]
            _, _, profile_pk, name, params, command, runtime, schedule_pk = profiles[team_pk][
                rng.randrange(len(PROFILES))
            ]
            kind, failed, t = rng.random(), rng.random() < 0.02, end - (n_runs - g) * step
            u = uuid.uuid4()
            finished = t + timedelta(seconds=runtime + 3.5)
            run_summary = (
                None if failed else summary | {"total": summary["total"] | {"iops": round(800 + 400 * kind, 1)}}
            )
            values = defaults | {
                "uuid": u, "team_id": team_pk, "disk_id": disk_pk, "profile_id": profile_pk, "profile_name": name,
                "parameters": json.loads(params), "schedule_id": schedule_pk if kind < 0.85 else None,
                "fire_time": t if kind < 0.85 else None,
                "trigger": "schedule" if kind < 0.85 else "manual" if kind < 0.95 else "api",
                "created_by_id": user_pk if kind >= 0.85 else None, "state": "failed" if failed else "succeeded",
                "explanation": "fio exited with status 1: fio: io_u error on file: Input/output error" if failed
                else "finished",
                "created_at": t + timedelta(milliseconds=40), "not_before": t,
                "queued_at": t + timedelta(milliseconds=150), "started_at": t + timedelta(seconds=1.2),
                "finished_at": finished, "progress": progress | {"elapsed_s": runtime}, "heartbeat_at": finished,
                "cancel_requested": False, "command": command, "remote_dir": f"/var/tmp/benchweb/run-{u}",  # noqa: S108
                "remote_pid": 20000 + g % 30000, "exit_status": 1 if failed else 0, "raw_output": "",
                "raw_stderr": "", "summary": run_summary, "limits_snapshot": json.loads(limits),
                "destructive": False, "warnings": [],
            }  # fmt: skip
            batch.append([f.get_db_prep_save(values[f.attname], connection) for f in fields])
            if len(batch) == 5000 or g == n_runs:
                cursor.executemany(sql, batch)
                batch = []
    insert_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE jobs_run")
    analyze_s = time.perf_counter() - t0
    database = Path(connection.settings_dict["NAME"])
    fleet.heap_mb = database.stat().st_size / 2**20  # the whole database file: SQLite has no per-table size here
    fleet.build_s = {"insert": insert_s, "analyze": analyze_s}


# ----------------------------------------------------------------------------------------- the load


@dataclass
class Sample:
    start: float  # perf_counter at the request's start
    ms: float


class Load:
    """Closed-loop clients: each sends a request, reads the whole response, checks it, and sends the next."""

    def __init__(self, port: int, tokens: list[str], disks: list[int], think_ms: float, seed: int) -> None:
        self.port, self.tokens, self.disks, self.think_s = port, tokens, disks, think_ms / 1000
        self.seed = seed
        self.samples: list[Sample] = []
        self.problems: list[str] = []
        self.connects = 0
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        for i, token in enumerate(self.tokens):
            thread = threading.Thread(target=self._client, args=(token, random.Random(self.seed + i)), daemon=True)
            self._threads.append(thread)
            thread.start()

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=35)

    def _client(self, token: str, rng: random.Random) -> None:
        headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        mine: list[Sample] = []
        while not self._stop.is_set():
            disk = rng.choice(self.disks)
            t0 = time.perf_counter()
            try:
                if conn.sock is None:
                    conn.connect()
                    with self._lock:
                        self.connects += 1
                conn.request("GET", f"/api/v1/runs/?disk={disk}", headers=headers)
                response = conn.getresponse()
                body = response.read()
            except (OSError, http.client.HTTPException) as exc:
                conn.close()
                self._problem(f"disk {disk}: {type(exc).__name__}: {exc}")
                continue
            mine.append(Sample(t0, (time.perf_counter() - t0) * 1000))
            if response.status != 200:
                self._problem(f"disk {disk}: HTTP {response.status}: {body[:300]!r}")
            else:
                results = json.loads(body).get("results")
                if not isinstance(results, list) or len(results) != PAGE_SIZE:
                    self._problem(f"disk {disk}: {len(results or [])} results, not {PAGE_SIZE}")
            if self.think_s:
                time.sleep(self.think_s)
        conn.close()
        with self._lock:
            self.samples.extend(mine)

    def _problem(self, text: str) -> None:
        with self._lock:
            self.problems.append(text)
        if len(self.problems) > 100:
            self._stop.set()  # the server is broken; measuring more of it shows nothing new


class CpuMeter:
    """CPU seconds of gunicorn (master and workers), of PostgreSQL's backends of this database and of this
    script while the load runs, sampled every 0.5 s: Django closes a connection after BENCHWEB_DB_CONN_MAX_AGE
    (60 s) and its backend exits, so the backends are followed while they live. The machine's busy time
    (all CPUs, every process, other people's test runs included) is the ground truth."""

    INTERVAL_S = 0.5

    def __init__(self, gunicorn_pid: int, database: str) -> None:
        self.gunicorn_pid, self.database = gunicorn_pid, database
        self.seconds: dict[str, float] = {}
        self._first: dict[tuple[int, float], float] = {}
        self._last: dict[tuple[int, float], tuple[str, float]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self.load: list[tuple[float, float, float]] = []
        self.busy_s = self.wall_s = 0.0

    def start(self) -> None:
        import psutil

        self._t0, self._busy0 = time.monotonic(), self._busy(psutil)
        self._sample(baseline=True)
        self._thread.start()

    def stop(self) -> None:
        import psutil

        self._stop.set()
        self._thread.join(timeout=5)
        self._sample()
        self.wall_s, self.busy_s = time.monotonic() - self._t0, self._busy(psutil) - self._busy0
        self.seconds = {}
        for key, (owner, total) in self._last.items():
            self.seconds[owner] = self.seconds.get(owner, 0.0) + total - self._first[key]

    @staticmethod
    def _busy(psutil: Any) -> float:
        t = psutil.cpu_times()
        return t.user + t.nice + t.system + getattr(t, "irq", 0.0) + getattr(t, "softirq", 0.0)

    def _loop(self) -> None:
        while not self._stop.wait(self.INTERVAL_S):
            self._sample()

    def _processes(self, psutil: Any) -> list[tuple[str, Any]]:
        found: list[tuple[str, Any]] = [("this script (load generator)", psutil.Process())]
        with contextlib.suppress(psutil.Error):
            master = psutil.Process(self.gunicorn_pid)
            found += [("gunicorn", p) for p in [master, *master.children(recursive=True)]]
        for p in psutil.process_iter(["cmdline"]):
            # A backend names its database in its title: "postgres: user dbname 127.0.0.1(port) state".
            title = " ".join(p.info["cmdline"] or [])
            if self.database and title.startswith("postgres: ") and f" {self.database} " in title:
                found.append(("postgres backends", p))
        return found

    def _sample(self, baseline: bool = False) -> None:
        import psutil

        self.load.append(os.getloadavg())
        for owner, process in self._processes(psutil):
            with contextlib.suppress(psutil.Error):
                times = process.cpu_times()
                key = (process.pid, process.create_time())
                total = times.user + times.system
                # Processes already there count from now; processes born later count whole.
                self._first.setdefault(key, total if baseline else 0.0)
                self._last[key] = (owner, total)


def latency(samples: list[Sample], since: float, until: float) -> dict[str, float]:
    """Requests that started in [since, until): latency percentiles and the throughput over that window."""
    ms = sorted(s.ms for s in samples if since <= s.start < until)
    if not ms:
        raise BenchError("no request finished in the measured window")
    return {"n": len(ms), "rps": len(ms) / (until - since), "mean": statistics.fmean(ms), "p50": percentile(ms, 50),
            "p95": percentile(ms, 95), "p99": percentile(ms, 99), "max": ms[-1]}  # fmt: skip


def run_load(args: argparse.Namespace, port: int, fleet: Fleet, tokens: list[str], seconds: float,
             warmup: float, meter: CpuMeter | None = None) -> tuple[dict[str, float], Load]:  # fmt: skip
    load = Load(port, tokens, fleet.team_disks, args.think_ms, args.seed)
    load.start()
    try:
        time.sleep(warmup)
        since = time.perf_counter()
        if meter:
            meter.start()
        time.sleep(seconds)
        until = time.perf_counter()
        if meter:
            meter.stop()
    finally:
        load.stop()
    if load.problems:
        shown = "\n  ".join(load.problems[:10])
        raise Failed(f"{len(load.problems)} responses were not 200 with {PAGE_SIZE} runs, e.g.:\n  {shown}")
    return latency(load.samples, since, until), load


def run_solo(port: int, fleet: Fleet, requests: int, seed: int) -> dict[str, float]:
    """One client, one connection, one request at a time: the service time without queueing."""
    rng = random.Random(seed)
    headers = {"Authorization": f"Bearer {fleet.tokens[0]}", "Accept": "application/json"}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    samples = []
    try:
        for i in range(requests + 10):
            disk = rng.choice(fleet.team_disks)
            t0 = time.perf_counter()
            conn.request("GET", f"/api/v1/runs/?disk={disk}", headers=headers)
            response = conn.getresponse()
            body = response.read()
            if i >= 10:  # the first ten warm the workers' connections and caches
                samples.append(Sample(t0, (time.perf_counter() - t0) * 1000))
            if response.status != 200 or len(json.loads(body)["results"]) != PAGE_SIZE:
                raise Failed(f"disk {disk}: HTTP {response.status}: {body[:300]!r}")
    finally:
        conn.close()
    return latency(samples, samples[0].start, samples[-1].start + samples[-1].ms / 1000 + 1e-9)


# ----------------------------------------------------------------------------------------- in-process look


def inspect_request(fleet: Fleet) -> dict[str, Any]:
    """One request through Django's test client: its SQL, the EXPLAIN of its SELECTs on runs, team scoping."""
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    client = Client(HTTP_HOST="localhost", HTTP_AUTHORIZATION=f"Bearer {fleet.profile_token}")
    disk = fleet.team_disks[len(fleet.team_disks) // 2]
    client.get(f"/api/v1/runs/?disk={disk}")
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(f"/api/v1/runs/?disk={disk}")
    if response.status_code != 200:
        raise Failed(f"the test client got HTTP {response.status_code}: {response.content[:300]!r}")
    body = response.json()
    queries = [{"ms": float(q["time"]) * 1000, "sql": q["sql"]} for q in ctx.captured_queries]
    plans = []
    with connection.cursor() as cursor:
        for q in queries:
            if q["sql"].startswith("SELECT") and "jobs_run" in q["sql"]:
                if connection.vendor == "postgresql":
                    cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + q["sql"])
                    plan = "\n".join(row[0] for row in cursor.fetchall())
                else:
                    cursor.execute("EXPLAIN QUERY PLAN " + q["sql"])
                    plan = "\n".join(str(row[-1]) for row in cursor.fetchall())
                plans.append({"sql": sql_shape(q["sql"], tables=False), "plan": plan})
    # Team scoping: the first team's token asking for the second team's disk sees nothing; its owner sees runs.
    # Runs page by cursor, without a total: a page's length is what can be compared.
    foreign = client.get(f"/api/v1/runs/?disk={fleet.other_disks[0]}").json()
    own = Client(HTTP_HOST="localhost", HTTP_AUTHORIZATION=f"Bearer {fleet.other_token}")
    owner_view = own.get(f"/api/v1/runs/?disk={fleet.other_disks[0]}").json()
    seen, owner_sees = len(foreign.get("results", [None])), len(owner_view.get("results", []))
    if seen != 0 or not owner_sees:
        raise Failed(f"team scoping: another team's disk lists {seen} runs on a page, to its owner {owner_sees}")
    return {"disk": disk, "results": len(body["results"]), "next": bool(body.get("next")),
            "bytes": len(response.content), "queries": queries, "plans": plans, "owner_sees": owner_sees}  # fmt: skip


# (label, file suffix, function): where a request's time goes, by cumulative time in the profile.
PROFILE_PARTS = (
    ("whole request (test client)", "django/test/client.py", "get"),
    ("token authentication (2 queries)", "api/auth.py", "authenticate"),
    ("paginate_queryset (cursor page query, no COUNT)", "rest_framework/pagination.py", "paginate_queryset"),
    ("serializing 50 runs (to_representation)", "rest_framework/serializers.py", "to_representation"),
    ("JSON rendering", "rest_framework/renderers.py", "render"),
    ("all SQL: cursor.execute", "django/db/backends/utils.py", "_execute"),
    ("  of which in psycopg", "psycopg/cursor.py", "execute"),
    ("model instances (Model.__init__)", "django/db/models/base.py", "__init__"),
)


def profile_requests(fleet: Fleet, requests: int, seed: int) -> dict[str, Any]:
    from django.test import Client

    client = Client(HTTP_HOST="localhost", HTTP_AUTHORIZATION=f"Bearer {fleet.profile_token}")
    rng = random.Random(seed)
    disks = [rng.choice(fleet.team_disks) for _ in range(requests)]
    for disk in disks[:5]:
        client.get(f"/api/v1/runs/?disk={disk}")
    profiler = cProfile.Profile()
    t0 = time.perf_counter()
    profiler.enable()
    for disk in disks:
        client.get(f"/api/v1/runs/?disk={disk}")
    profiler.disable()
    wall_ms = (time.perf_counter() - t0) * 1000 / requests
    stats = pstats.Stats(profiler)
    parts = []
    for label, suffix, name in PROFILE_PARTS:
        # The outermost entry only: recursive calls already count inside its cumulative time.
        ct = max((v[3] for k, v in stats.stats.items() if k[0].endswith(suffix) and k[2] == name), default=0.0)
        parts.append((label, ct * 1000 / requests))
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(25)
    tottime = "\n".join(line for line in out.getvalue().splitlines() if line.strip())
    return {"requests": requests, "wall_ms": wall_ms, "parts": parts, "top": tottime.split("ncalls", 1)[-1]}


# ----------------------------------------------------------------------------------------- measuring


def measure(args: argparse.Namespace, stack: Stack) -> dict[str, Any]:
    from cryptography.fernet import Fernet

    # Set before Django starts here, so this process and gunicorn read the same settings.
    os.environ["DJANGO_SECRET_KEY"] = secrets.token_urlsafe(50)
    os.environ["BENCHWEB_FIELD_KEYS"] = Fernet.generate_key().decode()
    configure_django(stack, args.db, args.database_url)
    say(f"[{args.db}] building {args.runs:,} runs ...")
    t0 = time.perf_counter()
    fleet = build_fleet(args.runs, args.clients, args.seed, args.hosts, args.disks_per_host)
    fleet.build_s["total"] = time.perf_counter() - t0
    say(f"built in {fleet.build_s['total']:.1f} s: " + ", ".join(f"{k} {v:.1f} s" for k, v in fleet.build_s.items()))

    port = free_port()
    server = start_gunicorn(stack, port, args.workers, args.threads, dict(os.environ))
    try:
        wait_for_http(f"http://127.0.0.1:{port}/healthz", server, 60, stack.tmp / "gunicorn.log")
        say(f"gunicorn on 127.0.0.1:{port}, {args.workers} workers x {args.threads} threads; one client alone ...")
        solo = run_solo(port, fleet, args.solo_requests, args.seed)
        say(f"{args.clients} clients: {args.warmup:g} s warm-up, {args.duration:g} s measured ...")
        load_before = os.getloadavg()
        meter = CpuMeter(server.pid, stack.pg_name or "")
        loaded, load = run_load(args, port, fleet, fleet.tokens, args.duration, args.warmup, meter)
        load_after = os.getloadavg()
    finally:
        stop_group(server)
    inspected = inspect_request(fleet)
    profile = None
    if args.profile or loaded["p95"] > TARGET_P95_MS:
        say(f"profiling {args.profile_requests} requests in this process ...")
        profile = profile_requests(fleet, args.profile_requests, args.seed)
    return {
        "fleet": fleet, "solo": solo, "loaded": loaded, "connects": load.connects, "meter": meter,
        "load_before": load_before, "load_after": load_after, "inspected": inspected, "profile": profile,
        "cpus": os.cpu_count(), "server": server_version(),
    }  # fmt: skip


def print_report(args: argparse.Namespace, r: dict[str, Any]) -> bool:
    fleet: Fleet = r["fleet"]
    meter: CpuMeter = r["meter"]
    loaded, solo = r["loaded"], r["solo"]
    print(f"fleet: {fleet.runs:,} runs ({fleet.runs_by_team.get('first', 0):,} of the first team on "
          f"{len(fleet.team_disks)} disks, ~{fleet.runs_by_team.get('first', 0) // len(fleet.team_disks):,} a disk; "
          f"{fleet.runs_by_team.get('second', 0):,} of the second team on {len(fleet.other_disks)} disks) over "
          f"{DAYS} days")  # fmt: skip
    if not r["server"].startswith("postgresql"):
        print(f"  {r['server']}: the database file {fleet.heap_mb:,.0f} MB")
    else:
        print(f"  jobs_run: heap {fleet.heap_mb:,.0f} MB ({fleet.heap_mb * 2**20 / max(fleet.runs, 1):,.0f} B a "
              f"run), indexes {fleet.indexes_mb:,.0f} MB, toast {fleet.toast_mb:,.0f} MB; created_at correlation "
              f"{fleet.correlation if fleet.correlation is None else round(fleet.correlation, 3)}")  # fmt: skip
    print("  built in " + ", ".join(f"{k} {v:.1f} s" for k, v in fleet.build_s.items()))
    print(f"server: gunicorn {args.workers} workers x {args.threads} threads "
          f"({'sync: a new connection per request' if args.threads == 1 else 'gthread, keep-alive'}), "
          f"{r['cpus']} CPUs; {r['connects']} client connections opened")  # fmt: skip
    head = f"{'':<34}{'requests':>9}{'req/s':>8}{'mean':>8}{'p50':>8}{'p95':>8}{'p99':>8}{'max':>8}  ms"
    print("\n" + head)
    rows = ((f"1 client alone ({args.solo_requests})", solo),
            (f"{args.clients} clients, {args.duration:g} s (think {args.think_ms:g} ms)", loaded))  # fmt: skip
    for label, s in rows:
        print(f"{label:<34}{s['n']:>9}{s['rps']:>8.1f}{s['mean']:>8.1f}{s['p50']:>8.1f}{s['p95']:>8.1f}"
              f"{s['p99']:>8.1f}{s['max']:>8.1f}")  # fmt: skip
    n = loaded["n"]
    capacity = meter.wall_s * r["cpus"]
    print(f"\nCPU while loaded ({meter.wall_s:.1f} s, {r['cpus']} CPUs = {capacity:.0f} CPU-s; machine busy "
          f"{meter.busy_s:.1f} CPU-s = {100 * meter.busy_s / max(capacity, 1e-9):.0f} %):")  # fmt: skip
    counted = 0.0
    postgres = r["server"].startswith("postgresql")
    for owner in ("gunicorn", *(["postgres backends"] if postgres else []), "this script (load generator)"):
        seconds = meter.seconds.get(owner, 0.0)
        counted += seconds
        print(f"  {owner:<30}{seconds:>7.1f} CPU-s  {1000 * seconds / n:>6.2f} ms a request")
    rest = meter.busy_s - counted
    print(f"  {'everything else on the machine':<30}{rest:>7.1f} CPU-s  {1000 * rest / n:>6.2f} ms a request")
    before, after = r["load_before"], r["load_after"]
    print(f"load average (1 min): {before[0]:.2f} before the load, {max(x[0] for x in meter.load):.2f} at most "
          f"during it, {after[0]:.2f} after (5 min {after[1]:.2f}, 15 min {after[2]:.2f})")  # fmt: skip
    busy_ms = 1000 * (meter.seconds.get("gunicorn", 0.0) + meter.seconds.get("postgres backends", 0.0)) / n
    # Little's law for closed-loop clients: N = X x (R + Z), with Z the think time between requests.
    think_s = args.think_ms / 1000
    needed = args.clients / (TARGET_P95_MS / 1000 + think_s)
    print(f"Little's law: {args.clients} clients / {loaded['rps']:.0f} req/s - {args.think_ms:g} ms think = "
          f"{1000 * (args.clients / loaded['rps'] - think_s):.1f} ms mean time in the system (measured mean "
          f"{loaded['mean']:.1f} ms); a mean of {TARGET_P95_MS:g} ms would take ~{needed:.0f} req/s. At "
          f"{busy_ms:.1f} CPU-ms a request (gunicorn + PostgreSQL), {r['cpus']} whole CPUs serve at most "
          f"~{1000 * r['cpus'] / busy_ms:.0f} req/s.")  # fmt: skip

    i = r["inspected"]
    print(f"\none request (test client, disk {i['disk']}: {i['results']} runs on the first page, "
          f"{'a next page' if i['next'] else 'no next page'}, "
          f"{i['bytes']:,} bytes): {len(i['queries'])} SQL statements, "
          f"{sum(q['ms'] for q in i['queries']):.1f} ms")  # fmt: skip
    for q in i["queries"]:
        print(f"  {q['ms']:>6.1f} ms  {sql_shape(q['sql'], tables=False)[:230]}")
    print(f"team scoping: the first team's token lists 0 runs of the second team's disk; its owner sees "
          f"{i['owner_sees']} on the first page")  # fmt: skip
    for plan in i["plans"]:
        explain = "EXPLAIN (ANALYZE, BUFFERS)" if r["server"].startswith("postgresql") else "EXPLAIN QUERY PLAN"
        print(f"\n{explain} {plan['sql'][:200]}\n{plan['plan']}")
    if r["profile"]:
        p = r["profile"]
        print(f"\ncProfile of {p['requests']} requests through the test client ({p['wall_ms']:.1f} ms a request "
              f"with the profiler on); cumulative ms a request:")  # fmt: skip
        for label, ms in p["parts"]:
            print(f"  {label:<44}{ms:>7.1f}")
        print(f"\nby own time:\n   ncalls{p['top']}")
    met = loaded["p95"] <= TARGET_P95_MS
    print(f"\n{r['server']}: list runs, 1 page of {PAGE_SIZE} filtered by disk, {fleet.runs:,} runs, "
          f"{args.clients} clients: p95 "
          f"{loaded['p95']:.1f} ms at {loaded['rps']:.0f} req/s — target p95 <= {TARGET_P95_MS:g} ms: "
          f"{'PASS' if met else 'FAIL'}")  # fmt: skip
    return met


# ----------------------------------------------------------------------------------------- entry point


def main(argv: list[str] | None = None) -> int:
    cpus = os.cpu_count() or 1
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_database_options(parser, DEFAULT_URL, choices=("postgres", "sqlite"))
    parser.add_argument("--runs", type=int, default=1_000_000)
    parser.add_argument("--hosts", type=int, default=HOSTS, help=f"the first team's hosts (default {HOSTS}; the "
                        "second team has a tenth as many, at least one)")  # fmt: skip
    parser.add_argument("--disks-per-host", type=int, default=DISKS_PER_HOST,
                        help=f"disks on each host (default {DISKS_PER_HOST})")  # fmt: skip
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--duration", type=float, default=60.0, help="measured seconds (default 60)")
    parser.add_argument("--warmup", type=float, default=10.0, help="seconds of load before measuring (default 10)")
    parser.add_argument("--think-ms", type=float, default=0.0, help="each client's pause between requests")
    parser.add_argument("--workers", type=int, default=2 * cpus + 1, help=f"gunicorn workers (default {2 * cpus + 1})")
    parser.add_argument("--threads", type=int, default=1, help="threads a worker; 1: sync workers (default)")
    parser.add_argument("--solo-requests", type=int, default=200, help="requests of one client alone first")
    parser.add_argument("--profile", action="store_true", help="cProfile requests even when the target is met")
    parser.add_argument("--profile-requests", type=int, default=50)
    parser.add_argument("--seed", type=int, default=1)
    add_smoke_option(parser, runs=800, hosts=1, disks_per_host=1, clients=2, duration=1.0, warmup=0.5, workers=1,
                     solo_requests=5, profile_requests=3)  # fmt: skip
    args = parse_args(parser, argv)
    if args.hosts < 1 or args.disks_per_host < 1:
        parser.error("need --hosts and --disks-per-host >= 1")
    disks = (args.hosts + other_hosts(args.hosts)) * args.disks_per_host
    if (
        args.runs / disks < 4 * PAGE_SIZE
        or args.clients < 1
        or args.duration <= 0
        or args.warmup < 0
        or args.think_ms < 0
    ):
        parser.error(f"need --runs >= {4 * PAGE_SIZE * disks} (a full first page on "
                     "every disk), --clients >= 1, --duration > 0, --warmup >= 0, --think-ms >= 0")  # fmt: skip
    if args.workers < 1 or args.threads < 1 or args.solo_requests < 1 or args.profile_requests < 1:
        parser.error("need --workers, --threads, --solo-requests and --profile-requests >= 1")
    interrupt_on_signals()
    stack = Stack("benchweb-api-")
    status, result = run_guarded("api_runs_list", stack, lambda: measure(args, stack))
    if result is None:
        return status
    return verdict_status(args, print_report(args, result))


if __name__ == "__main__":
    sys.exit(main())
