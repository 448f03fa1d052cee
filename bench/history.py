"""Ten years of history (issue 34): how fast benchweb answers with many years of runs and their per-second samples
on PostgreSQL, the samples partitioned by month, and how long dropping a month takes.

    .venv/bin/python bench/history.py [--db postgres|sqlite] [--runs 1000000] [--samples-per-run 30]
        [--disks 1000] [--years 10] [--requests 10] [--clients 20] [--duration 20] [--workers 5]
        [--database-url postgres://postgres@127.0.0.1:5432/benchweb_historybench] [--keep] [--existing]

A fresh, migrated database gets one team, --disks disks (ten a host, custom, 40,000 IOPS) and --runs finished runs
spread evenly over the disks and over the last --years years, of bench/chart_endpoint.py's six profiles and
summaries, each with its result row (RunResult.of) and --samples-per-run per-second samples. On PostgreSQL
the database makes the rows itself (not the ORM, not Python): 200 summaries of each profile and their results
are COPY'd into tables of the bench's own and joined to generate_series on two connections, the samples' keys
and indexes dropped for the load and built again after it, their foreign key's per-row check switched off meanwhile
(as pg_dump --disable-triggers does) and the run ids checked by range after; on SQLite each row is built here
and written with executemany. Then VACUUM (ANALYZE); the days of the disks asked below are rebuilt
(RunResultDay.rebuild) as a stored run keeps them, and every other series gets its newest run (RunResultLatest)
from its results.

Then, median of --requests (after 2 untimed) through a logged-in Django test Client: a disk's all-time chart
(GET /disks/<pk>/series.json?range=all, the disk with the most runs), a run page (GET /runs/<pk>/) and the
series it draws (GET /runs/<pk>/series.json), the overview (GET /overview/), compliance (GET
/api/v1/disks/<pk>/compliance/?period=all), GET /metrics (with an API token); the API runs list
(GET /api/v1/runs/?disk=<pk>) under gunicorn (--workers sync workers) with --clients closed-loop clients for
--duration seconds after 3 s of warm-up (bench/api_runs_list.py's load), p95; and dropping a month: the ten
oldest month partitions of RunSample detached and dropped one by one (jobs/models/partitions.py, as retention
does), median (on SQLite, where nothing is partitioned, the month's rows deleted). --keep leaves the database
(less those ten months) to measure again with --existing, which measures everything but the drop unless
--drop N asks for it.

Targets (issue 34): chart <= 150 ms, run page <= 100 ms, overview <= 300 ms, compliance period=all <= 150 ms,
/metrics <= 1 s, runs list p95 <= 50 ms at 20 clients, dropping a month <= 1 s. Exit status: 0 all met, 1 one
missed, 2 the measurement failed, 130 interrupted. --smoke: 600 runs on 4 disks, 5 samples each, 2 clients for
a second (the set-up and the report work; the figures mean nothing).
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import secrets
import statistics
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import api_runs_list
import chart_endpoint
from benchkit import (
    PG_SERVER,
    BenchError,
    Stack,
    add_database_options,
    add_smoke_option,
    configure_django,
    free_port,
    interrupt_on_signals,
    measure_and_report,
    parse_args,
    say,
    server_version,
    sql_shape,
    start_gunicorn,
    stop_group,
    time_gets,
    wait_for_http,
)

DEFAULT_PG_URL = f"{PG_SERVER}/benchweb_historybench"
# name: (target ms, what is judged)
TARGETS = {
    "chart": (150.0, "median"),
    "run page": (100.0, "median"),
    "overview": (300.0, "median"),
    "compliance": (150.0, "median"),
    "metrics": (1000.0, "median"),
    "runs list": (50.0, "p95"),
    "drop a month": (1000.0, "median"),
}
BATCH = 5000


def _write(model: Any, rows: Iterable[list[Any]], columns: list[str]) -> int:
    """rows into the model's table: COPY on PostgreSQL, executemany in batches on SQLite. The count."""
    from django.db import connection

    table, count = model._meta.db_table, 0
    names = ", ".join(f'"{c}"' for c in columns)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            with cursor.cursor.copy(f'COPY "{table}" ({names}) FROM STDIN') as copy:
                for row in rows:
                    copy.write_row(row)
                    count += 1
            return count
        sql = f'INSERT INTO "{table}" ({names}) VALUES ({", ".join(["%s"] * len(columns))})'  # noqa: S608
        batch: list[list[Any]] = []
        for row in rows:
            batch.append(row)
            if len(batch) == BATCH:
                cursor.executemany(sql, batch)
                count, batch = count + len(batch), []
        cursor.executemany(sql, batch)
        return count + len(batch)


def _write_to(table: str, columns: list[str], rows: Iterable[list[Any]]) -> None:
    """rows COPY'd into a table of the bench's own (PostgreSQL)."""
    from django.db import connection

    names = ", ".join(f'"{c}"' for c in columns)
    with connection.cursor() as cursor, cursor.cursor.copy(f"COPY {table} ({names}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)


def _as_rows(objects: Iterable[Any]) -> tuple[list[str], Iterator[list[Any]]]:
    """The columns of the objects' model and each object's values as the database takes them."""
    from django.db import connection

    objects = iter(objects)
    first = next(objects)
    # An id left to the database is not a column given.
    fields = [f for f in first._meta.concrete_fields if not (f.primary_key and getattr(first, f.attname) is None)]

    def rows() -> Iterator[list[Any]]:
        for o in itertools.chain([first], objects):
            yield [f.get_db_prep_save(getattr(o, f.attname), connection) for f in fields]

    return [f.column for f in fields], rows()


@dataclass
class Kit:
    """What every run of the bench shares: the team, the profiles and each profile's limits and parameters."""

    team: Any
    profiles: list[Any]
    snapshots: list[dict[str, Any]]
    parameters: list[dict[str, Any]]

    def run(self, pk: int, disk: Any, which: int, finished: datetime, summary: dict[str, Any]) -> Any:
        """A finished run of profile number `which`, as a scheduled run stores it."""
        from jobs.models import Run

        return Run(
            pk=pk, disk=disk, team=self.team, profile=self.profiles[which], profile_name=self.profiles[which].name,
            parameters=self.parameters[which], state=Run.State.SUCCEEDED, trigger=Run.Trigger.SCHEDULE,
            created_at=finished - timedelta(seconds=62), started_at=finished - timedelta(seconds=61),
            finished_at=finished, summary=summary, limits_snapshot=self.snapshots[which],
            command="[global]\nioengine=libaio\n...",
        )  # fmt: skip


def _load(args: argparse.Namespace, kit: Kit, disks: list[Any], now: datetime, step: timedelta,
          rng: random.Random) -> dict[str, int]:  # fmt: skip
    """Every run built here and written in batches (SQLite): run i on disk i % disks, profile i % profiles."""
    from jobs.models import Run, RunResult, RunSample, partitions

    began, counts, sample_id = time.monotonic(), {"runs": 0, "results": 0, "samples": 0}, 0
    n = len(kit.profiles)
    for start in range(0, args.runs, BATCH):
        runs = [
            kit.run(i + 1, disks[i % args.disks], i % n, now - step * (args.runs - i),
                    chart_endpoint._summary(rng, chart_endpoint.PROFILES[i % n], i // n))
            for i in range(start, min(args.runs, start + BATCH))
        ]  # fmt: skip
        columns, rows = _as_rows(runs)
        counts["runs"] += _write(Run, rows, columns)
        columns, rows = _as_rows(RunResult.of(run) for run in runs)
        counts["results"] += _write(RunResult, rows, columns)
        samples = []
        for run in runs:
            month, level = partitions.month_of(run.created_at), run.summary["total"]["iops"]
            for t in range(1, args.samples_per_run + 1):
                sample_id += 1
                samples.append([sample_id, float(t), level * rng.uniform(0.9, 1.1), None, run.pk, month])
        counts["samples"] += _write(RunSample, samples, ["id", "t_s", "read_iops", "write_iops", "run_id", "month"])
        if start // BATCH % 20 == 0:
            say(f"  {counts['runs']:,} runs, {counts['samples']:,} samples ({time.monotonic() - began:.0f} s)")
    return counts


# PostgreSQL makes the rows itself from templates, not Python: at 10 M runs and 300 M samples, building and
# sending each row from here ran at ~1,000 runs (30,000 samples) a second, about three hours.
VARIANTS = 200  # summaries of each profile the generated runs cycle through
CHUNK = 50_000  # runs a statement
# Run i (from 0): id i + 1, disk i % disks, profile i % profiles, finished (runs - i) steps before now, the
# summary of variant (i // profiles + i // disks) % VARIANTS, so that neighbouring runs of a disk differ.
GENERATED = """
    FROM generate_series(%(first)s::bigint, %(last)s::bigint) AS i
    CROSS JOIN LATERAL (SELECT %(now)s::timestamptz - (%(runs)s - i) * %(step)s::interval AS f) AS w
    JOIN bench_template AS t
      ON t.id = mod(div(i, %(profiles)s) + div(i, %(disks)s), %(variants)s) * %(profiles)s + mod(i, %(profiles)s)
"""


def _generate(args: argparse.Namespace, kit: Kit, disks: list[Any], now: datetime, step: timedelta,
              rng: random.Random) -> dict[str, int]:  # fmt: skip
    """The same runs as _load, made by PostgreSQL in chunks on two connections: templates (VARIANTS runs of
    each profile and their results, COPY'd into tables of their own) joined to generate_series."""
    from django.db import connection

    from jobs.models import Run, RunResult

    n = len(kit.profiles)
    templates = [
        kit.run(v * n + which, disks[0], which, now, chart_endpoint._summary(rng, chart_endpoint.PROFILES[which], v))
        for v in range(VARIANTS)
        for which in range(n)
    ]
    with connection.cursor() as cursor:
        for table, model in (("bench_template", Run), ("bench_template_result", RunResult)):
            cursor.execute(f"DROP TABLE IF EXISTS {table}")
            cursor.execute(f"CREATE TABLE {table} (LIKE {model._meta.db_table})")
        cursor.execute("CREATE TABLE bench_level AS SELECT 0::bigint AS id, 0::float8 AS level LIMIT 0")
    # The results' run_id is their template's id: the template tables have no foreign keys.
    _write_to("bench_template", *_as_rows(templates))
    _write_to("bench_template_result", *_as_rows(RunResult.of(run) for run in templates))
    with connection.cursor() as cursor:
        cursor.execute("INSERT INTO bench_level SELECT id, (summary->'total'->>'iops')::float8 FROM bench_template")
    run_columns = [f.column for f in Run._meta.concrete_fields]
    result_columns = [f.column for f in RunResult._meta.concrete_fields]
    disk_of = "(%(disk_ids)s::bigint[])[mod(i, %(disks)s) + 1]"
    runs_sql = _generated_insert(Run, run_columns, "t", {
        "id": "i + 1", "uuid": "gen_random_uuid()", "disk_id": disk_of, "created_at": "f - interval '62 s'",
        "started_at": "f - interval '61 s'", "finished_at": "f",
    })  # fmt: skip
    results_sql = _generated_insert(RunResult, result_columns, "r", {
        "run_id": "i + 1", "disk_id": disk_of, "finished_at": "f",
        "finished_ms": "floor(extract(epoch FROM f) * 1000)::bigint",
    }, "JOIN bench_template_result AS r ON r.run_id = t.id")  # fmt: skip
    samples_sql = (
        'INSERT INTO "jobs_runsample" (id, run_id, month, t_s, read_iops, write_iops) '
        "SELECT i * %(per_run)s + s, i + 1, date_trunc('month', (f - interval '62 s') AT TIME ZONE 'UTC')::date, "
        "s, l.level * (0.9 + 0.2 * random()), NULL" + GENERATED
        + " JOIN bench_level AS l ON l.id = t.id CROSS JOIN generate_series(1, %(per_run)s) AS s"
    )  # fmt: skip
    shared = {"now": now, "runs": args.runs, "step": step, "profiles": n, "disks": args.disks,
              "variants": VARIANTS, "disk_ids": [d.pk for d in disks], "per_run": args.samples_per_run}  # fmt: skip
    counts = {"runs": 0, "results": 0, "samples": 0}
    chunks = [(first, min(args.runs, first + CHUNK) - 1) for first in range(0, args.runs, CHUNK)]
    began, lock = time.monotonic(), threading.Lock()

    def make(chunk: tuple[int, int]) -> None:
        with connection.cursor() as cursor:
            made = []
            for sql in (runs_sql, results_sql, samples_sql):
                cursor.cursor.execute(sql, shared | {"first": chunk[0], "last": chunk[1]})
                made.append(cursor.cursor.rowcount)
        with lock:
            for what, count in zip(counts, made, strict=True):
                counts[what] += count
            done = counts["runs"] / args.runs
            if len(chunks) < 20 or chunk[0] // CHUNK % 10 == 0:
                spent = time.monotonic() - began
                say(f"  {counts['runs']:,} runs, {counts['samples']:,} samples ({spent:.0f} s, "
                    f"{done:.0%}, about {spent / done - spent:.0f} s to go)")  # fmt: skip

    def make_closing(chunk: tuple[int, int]) -> None:
        try:
            make(chunk)
        finally:
            connection.close()  # this thread's own

    again = _drop_keys("jobs_runsample")
    # The samples' foreign key stays; its per-row check is switched off for the load, as pg_dump's
    # --disable-triggers does for a data-only restore. Dropped and added again, PostgreSQL re-checked it as one
    # anti-join a month partition, each reading the whole runs table: over 30 min at 10 M runs. The rows are
    # consistent by construction (a chunk's samples name the runs its own statement made); _check_run_ids proves it.
    with connection.cursor() as cursor:
        cursor.execute('ALTER TABLE "jobs_runsample" DISABLE TRIGGER ALL')
    try:
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(make_closing, chunks))
    finally:
        with connection.cursor() as cursor:
            cursor.execute('ALTER TABLE "jobs_runsample" ENABLE TRIGGER ALL')
    say(f"  {counts['samples']:,} samples in {time.monotonic() - began:.0f} s; their keys and indexes again ...")
    with connection.cursor() as cursor:
        for table in ("bench_template", "bench_template_result", "bench_level"):
            cursor.execute(f"DROP TABLE {table}")
        cursor.execute("SET maintenance_work_mem = '1GB'")
        for statement in again:
            cursor.execute(statement)
    _check_run_ids()
    return counts


def _check_run_ids() -> None:
    """Every sample names a run that exists, checked in index reads rather than a join: the runs' ids are
    1..N without a gap (count = max) and the samples' run ids lie within them."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*), min(id), max(id) FROM jobs_run")
        runs, first, last = cursor.fetchone()
        cursor.execute("SELECT min(run_id), max(run_id) FROM jobs_runsample")
        low, high = cursor.fetchone()
    if runs != last - first + 1 or low < first or high > last:
        raise BenchError(f"the load is inconsistent: runs {runs:,} with ids {first}..{last}, samples' runs "
                         f"{low}..{high}")  # fmt: skip


def _drop_keys(table: str) -> list[str]:
    """The table's keys and indexes dropped for the load, as PostgreSQL's manual advises for populating a
    database (building an index once is cheaper than growing it row by row, and two loaders growing one leave it
    half empty); the statements that make them again as the migrations made them, in order."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT conname, contype, pg_get_constraintdef(oid) FROM pg_constraint "
            "WHERE conrelid = %s::regclass AND contype IN ('p', 'u') ORDER BY contype",
            [table],
        )
        keys = cursor.fetchall()  # foreign keys stay (_generate switches their checks off instead)
        cursor.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = %s", [table])
        indexes = [(name, sql) for name, sql in cursor.fetchall() if name not in {k[0] for k in keys}]
        for name, _, _ in reversed(keys):
            cursor.execute(f'ALTER TABLE "{table}" DROP CONSTRAINT "{name}"')
        for name, _ in indexes:
            cursor.execute(f'DROP INDEX "{name}"')
    # A partitioned table's index is listed as made ON ONLY the parent (its partitions' attached later): made
    # again on the whole table, it is built on every partition.
    return [
        *(f'ALTER TABLE "{table}" ADD CONSTRAINT "{name}" {sql}' for name, _, sql in keys),
        *(sql.replace(" ON ONLY ", " ON ", 1) for _, sql in indexes),
    ]


def _generated_insert(model: Any, columns: list[str], source: str, made: dict[str, str], join: str = "") -> str:
    """INSERT of the model's rows from GENERATED: the columns in `made` computed, the rest the template's."""
    values = ", ".join(made.get(c, f'{source}."{c}"') for c in columns)
    names = ", ".join(f'"{c}"' for c in columns)
    return f'INSERT INTO "{model._meta.db_table}" ({names}) SELECT {values}' + GENERATED + join


def build(args: argparse.Namespace) -> dict[str, Any]:
    """The team, its disks, runs, results and samples; what the measurements ask for."""
    from django.contrib.auth.models import User
    from django.db import connection
    from django.utils import timezone

    from jobs.models import Disk, Host, Profile, Run, RunSample, partitions
    from jobs.teams import membership as teams

    rng = random.Random(args.seed)
    user = User.objects.create_user("bench")
    team = teams.place_new_user(user).team
    hosts = Host.objects.bulk_create(
        Host(team=team, name=f"vm{h:04}", address=f"10.{h // 250}.{h % 250}.1", username="bench")
        for h in range(-(-args.disks // 10))
    )
    disks = Disk.objects.bulk_create(
        Disk(
            host=hosts[d // 10],
            team=team,
            label=f"d{d:04}",
            target_path=f"/data/d{d % 10}",
            disk_type="custom",
            spec_iops=40_000,
            spec_bytes_per_s=8 * 140_000_000,
        )
        for d in range(args.disks)
    )
    profiles = [
        Profile.objects.create(team=team, name=name, rw=rw, block_size_bytes=bs, iodepth=64, jobs=8, runtime_s=60)
        for name, rw, bs, _, _ in chart_endpoint.PROFILES
    ]
    kit = Kit(team, profiles, [disks[0].limits(block_size=p.block_size_bytes).as_dict() for p in profiles],
              [p.parameters() for p in profiles])  # fmt: skip
    now = timezone.now()
    step = timedelta(days=365.25 * args.years) / args.runs
    months = {partitions.month_of(now - step * i) for i in range(0, args.runs, max(1, args.runs // 2000))}
    for month in months | {partitions.month_of(now)}:
        partitions.ensure("jobs_runsample", month)
    began = time.monotonic()
    if connection.vendor == "postgresql":
        counts = _generate(args, kit, disks, now, step, rng)
    else:
        counts = _load(args, kit, disks, now, step, rng)
    with connection.cursor() as cursor:
        for model in (Run, RunSample):  # RunResult's key is its run's
            table = model._meta.db_table
            if connection.vendor == "postgresql":
                cursor.execute(f"SELECT setval(pg_get_serial_sequence(%s, 'id'), (SELECT max(id) FROM {table}))",  # noqa: S608
                               [table])  # fmt: skip
    load_s = time.monotonic() - began
    asked = _asked(args, user, disks[:5], "VACUUM (ANALYZE)" if connection.vendor == "postgresql" else "ANALYZE")
    return counts | asked | {"load_s": load_s, "built_s": time.monotonic() - began}


def _asked(args: argparse.Namespace, user: Any, disks: list[Any], vacuum: str) -> dict[str, Any]:
    """What the measurements ask for of the loaded history: the measured disks' days rebuilt as a stored run keeps
    them and every series' pointer, then `vacuum` run (as autovacuum would leave the rows: visible to all, so
    read from an index alone); the newest run of the first disk, and a token for each client and the scrape."""
    from django.db import connection

    from jobs.api.models import ApiToken
    from jobs.models import Run, RunResultDay

    for disk in disks:
        RunResultDay.rebuild(disk)
    _point_latest()
    with connection.cursor() as cursor:
        cursor.execute(vacuum)
    run = Run.objects.filter(disk=disks[0]).order_by("-pk").first()
    assert run is not None
    tokens = [ApiToken.issue(user, disks[0].team, f"bench client {i}")[1] for i in range(args.clients + 1)]
    return {"user": user, "disk": disks[0].pk, "disks": [d.pk for d in disks], "run": run.pk, "tokens": tokens}


def _point_latest() -> None:
    """Each series' newest run (RunResultLatest) for the disks whose days the bench did not build, as a stored
    run keeps it: only the asked disks have day rows (building ten years of them for every disk takes hours)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO jobs_runresultlatest (disk_id, profile_name, last_run, last_ms) "
            "SELECT disk_id, profile_name, run_id, finished_ms FROM (SELECT disk_id, profile_name, run_id, "
            "finished_ms, ROW_NUMBER() OVER (PARTITION BY disk_id, profile_name ORDER BY finished_ms DESC, "
            "run_id DESC) AS rank FROM jobs_runresult WHERE disk_id NOT IN "
            "(SELECT DISTINCT disk_id FROM jobs_runresultlatest)) AS ranked WHERE rank = 1"
        )


def _loaded(args: argparse.Namespace) -> dict[str, Any]:
    """What the measurements ask for, from a database an earlier run of this bench loaded and kept (--existing):
    its counts (the samples as PostgreSQL's statistics estimate them: counting 300 M rows takes minutes)."""
    from django.contrib.auth.models import User
    from django.db import connection

    from jobs.models import Disk

    began = time.monotonic()
    user = User.objects.get(username="bench")
    asked = _asked(
        args, user, list(Disk.objects.order_by("pk")[:5]), "VACUUM (ANALYZE) jobs_runresultday, jobs_runresultlatest"
    )
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM jobs_run")
        runs = cursor.fetchone()[0]
        cursor.execute("SELECT sum(reltuples)::bigint FROM pg_class WHERE relname LIKE 'jobs_runsample_p%%' "
                       "AND relkind = 'r'")  # fmt: skip
        samples = cursor.fetchone()[0] or 0
    return asked | {"runs": runs, "results": runs, "samples": samples, "load_s": 0.0,
                    "built_s": time.monotonic() - began}  # fmt: skip


def _slowest_statement(client: Any, url: str) -> tuple[float, str]:
    """One more request: its slowest SQL statement (ms, its shape), where a page's database time goes."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        client.get(url)
    ms, sql = max(((float(q["time"]) * 1000, q["sql"]) for q in queries.captured_queries), default=(0.0, ""))
    return ms, sql_shape(sql)[:160]


def _drop_months(n: int) -> tuple[list[float], int]:
    """The n oldest months of samples gone one by one, each timed (ms); the rows they held."""
    from django.db import connection

    from jobs.models import RunSample, partitions

    times, rows = [], 0
    if connection.vendor == "postgresql":
        for part, _ in partitions.months("jobs_runsample")[:n]:
            began = time.perf_counter()
            rows += partitions.drop("jobs_runsample", part)
            times.append((time.perf_counter() - began) * 1000)
        return times, rows
    for month in sorted(set(RunSample.objects.values_list("month", flat=True)))[:n]:
        began = time.perf_counter()
        rows += RunSample.objects.filter(month=month).delete()[0]
        times.append((time.perf_counter() - began) * 1000)
    return times, rows


def measure(args: argparse.Namespace, stack: Stack) -> dict[str, Any]:
    from cryptography.fernet import Fernet

    os.environ["DJANGO_SECRET_KEY"] = secrets.token_urlsafe(50)
    os.environ["BENCHWEB_FIELD_KEYS"] = Fernet.generate_key().decode()
    configure_django(stack, args.db, args.database_url, existing=args.existing)
    if args.keep:
        stack.pg_name = None  # not dropped at the end
    from django.test import Client

    if args.existing:
        say(f"[{args.db}] measuring the history already in {args.database_url} ...")
        built = _loaded(args)
    else:
        say(f"[{args.db}] {args.runs:,} runs x {args.samples_per_run} samples on {args.disks:,} disks over "
            f"{args.years} years ...")  # fmt: skip
        built = build(args)
    say(f"[{args.db}] loaded in {built['load_s']:.0f} s, built in {built['built_s']:.0f} s; measuring ...")
    client = Client(HTTP_HOST="localhost")
    client.force_login(built["user"])
    asks = {
        "chart": f"/disks/{built['disk']}/series.json?range=all",
        "run page": f"/runs/{built['run']}/",
        "run series": f"/runs/{built['run']}/series.json",
        "overview": "/overview/",
        "compliance": f"/api/v1/disks/{built['disk']}/compliance/?period=all",
    }
    metrics = Client(HTTP_HOST="localhost", HTTP_AUTHORIZATION=f"Bearer {built['tokens'][-1]}")
    times, cpu, slowest = {}, {}, {}
    for name, (asker, url) in ({n: (client, u) for n, u in asks.items()} | {"metrics": (metrics, "/metrics")}).items():
        times[name], cpu[name], _, _ = time_gets(asker, url, 2, args.requests)
        slowest[name] = _slowest_statement(asker, url)

    port = free_port()
    server = start_gunicorn(stack, port, args.workers, 1, dict(os.environ))
    try:
        wait_for_http(f"http://127.0.0.1:{port}/healthz", server, 60, stack.tmp / "gunicorn.log")
        say(f"[{args.db}] {args.clients} clients on the runs list for {args.duration:g} s ...")
        fleet = api_runs_list.Fleet(team_disks=built["disks"], other_disks=[], tokens=built["tokens"][:-1],
                                    profile_token="", other_token="")  # fmt: skip
        loaded, _ = api_runs_list.run_load(args, port, fleet, fleet.tokens, args.duration, 3)
    finally:
        stop_group(server)
    # Kept as loaded: its months stay (and a check still running on the table would hold the drop).
    drops = args.drop if args.drop is not None else (0 if args.existing else 10)
    times["drop a month"], dropped = _drop_months(drops) if drops else ([], 0)
    return {
        "db": args.db, "server": server_version(), "runs": built["runs"], "samples": built["samples"],
        "disks": args.disks, "years": args.years, "load_s": built["load_s"], "times": times, "cpu": cpu,
        "slowest": slowest, "runs list": loaded, "dropped rows": dropped, "cpus": os.cpu_count(),
        "load_average": os.getloadavg(),
    }  # fmt: skip


def report(results: list[dict[str, Any]]) -> bool:
    met = True
    for r in results:
        print(f"{r['server']}: {r['runs']:,} runs, {r['samples']:,} samples on {r['disks']:,} disks over "
              f"{r['years']} years (loaded in {r['load_s']:.0f} s); {r['cpus']} CPUs, load average "
              f"{r['load_average'][0]:.1f}")  # fmt: skip
        for name, values in r["times"].items():
            if not values:
                print(f"  {name:<13} not measured (--existing keeps the database as it is; --drop N drops N months)")
                continue
            median = statistics.median(values)
            target = TARGETS.get(name)
            ok = target is None or median <= target[0]
            met = met and ok
            judged = f"target median <= {target[0]:.0f} ms  {'MET' if ok else 'MISSED'}" if target else "(not judged)"
            extra = f", {r['dropped rows']:,} rows in {len(values)} months" if name == "drop a month" else ""
            if name in r["cpu"]:  # the CPU of this process (Django), less disturbed by a busy machine than the wall
                extra += f" (CPU here {statistics.median(r['cpu'][name]):.1f} ms)"
            print(f"  {name:<13} median {median:8.1f} ms, max {max(values or [0]):8.1f} ms{extra}   {judged}")
            if name in r["slowest"]:
                print(f"  {'':<13} slowest statement {r['slowest'][name][0]:.1f} ms: {r['slowest'][name][1]}")
        loaded, (target, _) = r["runs list"], TARGETS["runs list"]
        ok = loaded["p95"] <= target
        met = met and ok
        print(f"  {'runs list':<13} p95 {loaded['p95']:8.1f} ms, p50 {loaded['p50']:.1f} ms, {loaded['rps']:.0f} "
              f"requests/s ({loaded['n']:,})   target p95 <= {target:.0f} ms  {'MET' if ok else 'MISSED'}")  # fmt: skip
    return met


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_database_options(parser, DEFAULT_PG_URL, choices=("postgres", "sqlite"))
    parser.add_argument("--runs", type=int, default=1_000_000)
    parser.add_argument("--samples-per-run", type=int, default=30)
    parser.add_argument("--disks", type=int, default=1000)
    parser.add_argument("--years", type=int, default=10)
    parser.add_argument("--requests", type=int, default=10, help="timed requests of each page (default 10)")
    parser.add_argument("--clients", type=int, default=20, help="clients of the runs list (default 20)")
    parser.add_argument("--duration", type=float, default=20, help="seconds of the runs list measured (default 20)")
    parser.add_argument("--workers", type=int, default=2 * (os.cpu_count() or 1) + 1, help="gunicorn workers")
    parser.add_argument("--think-ms", type=float, default=0, help="pause of a runs-list client between requests")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--existing", action="store_true", help="measure --database-url as an earlier load left it (kept as it is)"
    )
    parser.add_argument(
        "--drop", type=int, default=None, metavar="N",
        help="months dropped (the oldest, one by one, timed): default 10, none with --existing",
    )  # fmt: skip
    parser.add_argument(
        "--keep", action="store_true", help="keep the database this run loads (to measure again with --existing)"
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    add_smoke_option(parser, runs=600, samples_per_run=5, disks=4, years=2, requests=2, clients=2, duration=1,
                     workers=2)  # fmt: skip
    args = parse_args(parser, argv)
    if args.runs < args.disks * api_runs_list.PAGE_SIZE or args.disks < 1 or args.samples_per_run < 1:
        parser.error(f"need --disks >= 1, --samples-per-run >= 1 and --runs >= {api_runs_list.PAGE_SIZE} per disk")
    interrupt_on_signals()
    return measure_and_report(__file__, argv, args, "history", measure, report)


if __name__ == "__main__":
    sys.exit(main())
