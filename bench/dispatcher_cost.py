"""What one beat tick costs with 1,000 enabled schedules, on SQLite and on PostgreSQL.

    .venv/bin/python bench/dispatcher_cost.py [--db sqlite|postgres|both] [--ticks 30] [--per-tick] [--profile]
        [--database-url postgres://postgres@127.0.0.1:5432/benchweb_bench]

Each database gets a fresh, migrated benchweb database, an embedded redis-server and a realistic fleet: 20 teams,
100 hosts (every tenth one exclusive), 400 disks of catalog types, 6 profiles per team, 1,000 enabled schedules
(cron "*/5 * * * *"-style, hourly, every 6 h, daily "30 2 * * *"-style and weekly in eight time zones, and
every-N-minutes interval schedules with second-level anchors; 1-3 target disks and 1-2 profiles each; some
staggered, auto-staggered, blacked out or windowed, each one accepted by scheduling.validate), and a history
of finished runs. The simulated clock then ticks once a minute, just after the minute, where every cron fire
of that minute comes due: about 1-3 % of the schedules per tick (the report says how many exactly). That is
the busiest tick of each minute; `--step 5` ticks at the production cadence instead (BENCHWEB_TICK_SECONDS,
default 5 s), where most ticks find nothing due.

Each tick is the real `jobs.schedules.dispatcher.tick(now)` (materialise, expire_outside_window, dispatch_due, sweep),
timed as a Celery worker runs it: around every task benchweb.celery closes the thread's database connection
when it is older than CONN_MAX_AGE (always on SQLite, where that is 0) and otherwise keeps it, so on
PostgreSQL a tick reuses the connection of the one before, as in the worker. Claimed runs go out as one fan-
out launch message per tick to the embedded redis, where no worker consumes it (so nothing connects anywhere);
between ticks, untimed, the script plays the workers: queued runs start and finish after their profile's
expected duration, so disks are busy and later runs wait, as in production.

The report gives median, p95 and max of the tick and of each step, the SQL statements (count, time, and the
costliest statement shapes), the launch publishes, how many schedules were due and runs made and claimed,
the CPU time the tick used, and yardsticks of single operations on this machine at that moment.

Target: median tick <= 50 ms on each database. Exit status: 0 met, 1 missed, 2 the measurement failed,
130 interrupted. A missed target is followed by a cProfile of further ticks. Everything started here (redis,
the temporary directory, the PostgreSQL database, which must not exist beforehand) is removed again, also
on error or Ctrl-C.
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import io
import json
import os
import pstats
import random
import statistics
import sys
import sysconfig
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from benchkit import (
    DEFAULT_PG_URL,
    ROOT,
    BenchError,
    Stack,
    add_database_options,
    add_smoke_option,
    code_version,
    configure_django,
    each_database,
    interrupt_on_signals,
    p95_rounded,
    parse_args,
    run_guarded,
    say,
    server_version,
    sql_shape,
    start_redis,
    verdict_status,
)

TARGET_MEDIAN_MS = 50.0
TEAMS = 20
HOSTS_PER_TEAM = 5
DISKS_PER_HOST = 4
ZONES = ("UTC", "Europe/Berlin", "America/New_York", "America/Los_Angeles", "Asia/Shanghai", "Asia/Kolkata",
         "Asia/Tokyo", "Australia/Sydney")  # fmt: skip
# (name, tool, rw, block size, runtime s): the team profiles; the built-in presets are used as well.
PROFILES = (
    ("quick 4k randread 10 s", "fio", "randread", 4096, 10),
    ("4k randwrite 30 s", "fio", "randwrite", 4096, 30),
    ("64k seq read 60 s", "fio", "read", 65536, 60),
    ("4k randrw 120 s", "fio", "randrw", 4096, 120),
    ("1M seq write 300 s", "fio", "write", 2**20, 300),
    ("ndisk64 4k random 180 s", "ndisk64", "randrw", 4096, 180),
)
# (disk type, size, extra fields)
DISK_TYPES = (
    ("aws-gp3", 500, {}),
    ("aws-io2", 1000, {"spec_iops": 20000}),
    ("alibaba-essd-pl1", 800, {}),
    ("azure-premium-ssd", 1024, {}),
    ("gcp-pd-ssd", 500, {}),
    ("custom", None, {"spec_iops": 50000, "spec_bytes_per_s": 1_000_000_000}),
)


# ----------------------------------------------------------------------------------------- the fleet


@dataclass
class Fleet:
    schedules: int = 0
    disks: int = 0
    hosts: int = 0
    history: int = 0
    kinds: dict[str, int] = field(default_factory=dict)
    adjusted: int = 0  # schedules whose first draw scheduling.validate refused, made valid


def _pick_cron(rng: random.Random, index: int) -> tuple[str, str, str]:
    """(kind label, cron expression, 'short'|'any' profiles) for the index-th cron schedule."""
    roll = rng.random()
    minute, hour = rng.randrange(60), rng.randrange(24)
    if roll < 0.05 / 0.65:
        offset = index % 5
        return "cron */5", "*/5 * * * *" if offset == 0 else f"{offset}-59/5 * * * *", "short"
    if roll < 0.15 / 0.65:
        return "cron hourly", f"{minute} * * * *", "short"
    if roll < 0.25 / 0.65:
        return "cron every 6 h", f"{minute} */6 * * *", "any"
    if roll < 0.55 / 0.65:
        expression = "30 2 * * *" if rng.random() < 0.2 else f"{minute} {hour} * * *"
        return "cron daily", expression, "any"
    if rng.random() < 0.5:
        return "cron weekdays", f"{minute} {hour} * * 1-5", "any"
    return "cron weekly", f"{minute} {hour} * * {rng.randrange(7)}", "any"


def build_fleet(n_schedules: int, n_history: int, start: datetime, seed: int) -> Fleet:
    from django.contrib.auth import get_user_model

    from jobs import scheduling
    from jobs.models import Disk, Host, Profile, Run, Schedule, ScheduleProfile, Team
    from jobs.schedules import dispatcher

    rng = random.Random(seed)
    fleet = Fleet()
    get_user_model().objects.create(username="bench")
    builtins = list(Profile.objects.filter(team__isnull=True))
    teams, team_disks, team_profiles = [], {}, {}
    for t in range(TEAMS):
        team = Team.objects.create(name=f"team {t:02d}")
        teams.append(team)
        hosts = [
            Host.objects.create(team=team, name=f"t{t:02d}-host{h}", address=f"10.{t}.0.{h + 1}", username="bench",
                                site=f"site-{h % 2}", exclusive=(t * HOSTS_PER_TEAM + h) % 10 == 0)
            for h in range(HOSTS_PER_TEAM)
        ]  # fmt: skip
        disks = []
        for host in hosts:
            for d in range(DISKS_PER_HOST):
                disk_type, size, extra = DISK_TYPES[(host.pk + d) % len(DISK_TYPES)]
                disks.append(Disk.objects.create(host=host, label=f"disk{d}", target_path=f"/data/disk{d}",
                                                 disk_type=disk_type, size=size, **extra))  # fmt: skip
        team_disks[team.pk] = disks
        profiles = [
            Profile.objects.create(team=team, name=name, tool=tool, rw=rw, block_size_bytes=bs, runtime_s=runtime,
                                   size_bytes=2**30, read_percent=50 if rw == "randrw" else 100)
            for name, tool, rw, bs, runtime in PROFILES
        ]  # fmt: skip
        team_profiles[team.pk] = profiles + builtins
        fleet.hosts += len(hosts)
        fleet.disks += len(disks)

    rows, links, positions = [], [], []
    for i in range(n_schedules):
        team = teams[i % TEAMS]
        zone = ZONES[rng.randrange(len(ZONES))]
        fields: dict[str, Any] = {"kind": "cron", "timezone": zone}
        if rng.random() < 0.65:
            label, fields["cron"], length = _pick_cron(rng, i)
        else:
            minutes = rng.choice((15, 30, 60, 120, 240, 360, 720, 1440))
            label, length = f"interval {minutes} min", "short" if minutes <= 30 else "any"
            # Anchored at any second: interval fires do not line up on the minute.
            fields |= {"kind": "interval", "interval_minutes": minutes,
                       "starts_at": start - timedelta(seconds=rng.uniform(0, minutes * 60))}  # fmt: skip
        if rng.random() < 0.1:
            fields["blackouts"] = [rng.choice(("08:00-18:00", "22:00-06:00", "12:00-13:00"))]
        if rng.random() < 0.05:
            fields |= {"window_start": start - timedelta(days=30), "window_end": start + timedelta(days=30)}
        pool = team_profiles[team.pk]
        short = [p for p in pool if p.expected_seconds <= 30]
        profiles = rng.sample(short if length == "short" else pool, rng.choice((1, 1, 2)))
        disks = rng.sample(team_disks[team.pk], rng.choice((1, 1, 2, 3)))
        fields["auto_stagger"] = rng.random() < 0.1
        fields["stagger_s"] = 0 if fields["auto_stagger"] else rng.choice((0, 0, 30, 60, 300))
        schedule = Schedule(team=team, name=f"schedule {i:04d} {label}", enabled=True, **fields)
        sequence = dispatcher.sequence_seconds(profiles)
        errors = scheduling.validate(schedule.rule(), stagger_s=schedule.stagger_s, n_targets=len(disks),
                                     sequence_s=sequence)  # fmt: skip
        if errors:
            # What the form would refuse, made acceptable: no blackouts, no stagger, one short profile.
            fleet.adjusted += 1
            schedule.blackouts, schedule.stagger_s, schedule.auto_stagger = [], 0, False
            profiles = profiles[:1] if profiles[0].expected_seconds <= 30 else [short[0]]
            sequence = dispatcher.sequence_seconds(profiles)
            if errors := scheduling.validate(schedule.rule(), n_targets=len(disks), sequence_s=sequence):
                raise BenchError(f"{schedule.name}: {errors}")
        rule = schedule.rule()
        upcoming = scheduling.next_fires(rule, start, 1)
        schedule.checked_until, schedule.next_fire_at = start, upcoming[0] if upcoming else None
        rows.append(schedule)
        links.append(disks)
        positions.append(profiles)
        fleet.kinds[label] = fleet.kinds.get(label, 0) + 1
    Schedule.objects.bulk_create(rows)
    saved = list(Schedule.objects.order_by("pk"))
    through = Schedule.targets.through
    through.objects.bulk_create(
        through(schedule_id=s.pk, disk_id=d.pk) for s, disks in zip(saved, links, strict=True) for d in disks
    )
    ScheduleProfile.objects.bulk_create(
        ScheduleProfile(schedule_id=s.pk, profile=p, position=n)
        for s, profiles in zip(saved, positions, strict=True)
        for n, p in enumerate(profiles)
    )
    fleet.schedules = len(saved)

    # Finished runs of the past weeks: the Run table a live site has, with the indexes it has.
    history = []
    for n in range(n_history):
        index = rng.randrange(len(saved))
        schedule, disk, profile = saved[index], links[index][0], positions[index][0]
        fire_time = start - timedelta(minutes=n + 1)
        history.append(Run(
            team_id=disk.team_id, disk=disk, profile=profile, profile_name=profile.name,
            parameters=profile.parameters(), schedule=schedule, fire_time=fire_time, trigger=Run.Trigger.SCHEDULE,
            state=Run.State.SUCCEEDED if n % 20 else Run.State.FAILED, explanation="finished",
            not_before=fire_time, queued_at=fire_time, started_at=fire_time + timedelta(seconds=2),
            finished_at=fire_time + timedelta(seconds=profile.expected_seconds + 10), heartbeat_at=fire_time,
            summary={"tool": profile.tool, "total": {"iops": 1000.0}}, limits_snapshot={},
        ))  # fmt: skip
    Run.objects.bulk_create(history, batch_size=2000)
    fleet.history = n_history
    return fleet


# ----------------------------------------------------------------------------------------- measuring


@dataclass
class Tick:
    now: str
    total_ms: float
    cpu_ms: float  # CPU time of this process during the tick: well below total_ms means waiting (DB, redis, CPU)
    connect_ms: float
    steps_ms: dict[str, float]
    queries: int
    sql_ms: float
    publishes: int
    publish_ms: float
    due_schedules: int
    created: int
    claimed: int
    waiting_after: int  # pending runs whose time has come but whose disk or host is busy
    result: str


class Probe:
    """Times the steps of dispatcher.tick, its SQL statements and its launch publishes, in this process only."""

    def __init__(self) -> None:
        self.statements: dict[str, list[float]] = {}  # SQL text -> [count, seconds], over all measured ticks
        self.keep_shapes = False
        self.steps: dict[str, float] = {}
        self.queries = 0
        self.sql_s = 0.0
        self.publishes = 0
        self.publish_s = 0.0

    def reset(self) -> None:
        self.steps, self.queries, self.sql_s, self.publishes, self.publish_s = {}, 0, 0.0, 0, 0.0

    def sql(self, execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            elapsed = time.perf_counter() - t0
            self.sql_s += elapsed
            self.queries += 1
            if self.keep_shapes:  # grouped into shapes after the ticks, not here in the timed code
                seen = self.statements.setdefault(sql, [0, 0.0])
                seen[0] += 1
                seen[1] += elapsed

    def install(self) -> None:
        from jobs.runs import queueing, steps, sweeping
        from jobs.schedules import dispatcher

        def timed(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
            def wrapper(*args: Any, **kwargs: Any) -> Any:
                t0 = time.perf_counter()
                try:
                    return function(*args, **kwargs)
                finally:
                    self.steps[name] = self.steps.get(name, 0.0) + time.perf_counter() - t0

            return wrapper

        # tick() looks these up at call time: module attributes, so wrapping them here times the real tick.
        dispatcher.materialise = timed("materialise", dispatcher.materialise)
        dispatcher.expire_outside_window = timed("expire", dispatcher.expire_outside_window)
        queueing.dispatch_due = timed("dispatch_due", queueing.dispatch_due)
        sweeping.sweep = timed("sweep", sweeping.sweep)

        def counted(send: Callable[..., Any]) -> Callable[..., Any]:
            def wrapper(*args: Any, **kwargs: Any) -> None:
                t0 = time.perf_counter()
                try:
                    send(*args, **kwargs)
                finally:
                    self.publish_s += time.perf_counter() - t0
                    self.publishes += 1

            return wrapper

        # Claimed runs go out as one fan-out message per tick; the sweep re-sends single steps.
        steps.send_launches = counted(steps.send_launches)
        steps.send = counted(steps.send)


def due_schedules(now: datetime) -> int:
    """Schedules whose fires the tick at `now` makes: those due up to CLAIM_LEAD ahead (dispatcher.materialise)."""
    from jobs.models import Schedule
    from jobs.runs import states

    return Schedule.objects.filter(enabled=True, next_fire_at__lte=now + states.CLAIM_LEAD).count()


def waiting_runs(now: datetime) -> int:
    from jobs.models import Run

    return Run.objects.filter(state=Run.State.PENDING).exclude(not_before__gt=now).count()


def one_tick(probe: Probe, now: datetime) -> Tick:
    from django.db import close_old_connections, connection

    from jobs.schedules import dispatcher

    due = due_schedules(now)
    close_old_connections()  # as benchweb.celery does before every task: SQLite closes, PostgreSQL's is kept
    probe.reset()
    with connection.execute_wrapper(probe.sql):
        c0, t0 = time.process_time(), time.perf_counter()
        connection.ensure_connection()
        t1 = time.perf_counter()
        result = dispatcher.tick(now)
        c2, t2 = time.process_time(), time.perf_counter()
    close_old_connections()  # ... and after it
    # "created 3, skipped 0, claimed 3, re-polled 0, sets ended 0": each count by its name.
    counts = {name: int(count) for name, count in (part.rsplit(" ", 1) for part in result.split(", "))}
    created, claimed = counts["created"], counts["claimed"]
    return Tick(
        now=now.isoformat(timespec="seconds"),
        total_ms=(t2 - t0) * 1000,
        cpu_ms=(c2 - c0) * 1000,
        connect_ms=(t1 - t0) * 1000,
        steps_ms={name: seconds * 1000 for name, seconds in probe.steps.items()},
        queries=probe.queries,
        sql_ms=probe.sql_s * 1000,
        publishes=probe.publishes,
        publish_ms=probe.publish_s * 1000,
        due_schedules=due,
        created=created,
        claimed=claimed,
        waiting_after=waiting_runs(now),
        result=result,
    )


def play_workers(now: datetime, next_now: datetime) -> None:
    """Untimed, between ticks: queued runs start at once and finish after their expected duration; running
    runs keep a fresh heartbeat (their polls), so the sweep finds nothing stale, as on a healthy site."""
    from jobs import runners
    from jobs.models import Run

    Run.objects.filter(state=Run.State.QUEUED).update(
        state=Run.State.RUNNING, started_at=now, heartbeat_at=now, explanation="running"
    )
    for run in Run.objects.filter(state=Run.State.RUNNING).only("pk", "started_at", "parameters"):
        end = run.started_at + timedelta(seconds=runners.expected_seconds(run.parameters) + 10)
        if end <= next_now:
            Run.objects.filter(pk=run.pk).update(state=Run.State.SUCCEEDED, finished_at=end, explanation="done")
    Run.objects.filter(state=Run.State.RUNNING).update(heartbeat_at=next_now - timedelta(seconds=1))


def clock(start: datetime, step_s: float) -> Iterator[datetime]:
    k = 1
    while True:
        yield start + timedelta(seconds=k * step_s + 0.25)  # just after the minute, as a beat tick lands
        k += 1


def measure(args: argparse.Namespace, stack: Stack) -> dict[str, Any]:
    configure_django(stack, args.db, args.database_url)
    start_redis(stack)
    from django.db import connection

    real_now = datetime.now(UTC)
    start = real_now.replace(second=0, microsecond=0) + timedelta(minutes=1)
    say(f"[{args.db}] building the fleet: {args.schedules} schedules, {args.history} finished runs ...")
    t0 = time.perf_counter()
    fleet = build_fleet(args.schedules, args.history, start, args.seed)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
    say(f"[{args.db}] fleet built in {time.perf_counter() - t0:.1f} s; {args.warmup} warm-up ticks, "
        f"{args.ticks} measured ticks, {args.step:g} s apart")  # fmt: skip
    load_before = os.getloadavg()[0]
    probe = Probe()
    probe.install()
    times = clock(start, args.step)
    now = next(times)
    ticks: list[Tick] = []
    probe.keep_shapes = args.warmup == 0
    for n in range(args.warmup + args.ticks):
        tick = one_tick(probe, now)
        following = next(times)
        play_workers(now, following)
        if n >= args.warmup:
            ticks.append(tick)
        probe.keep_shapes = n + 1 >= args.warmup
        now = following
    probe.keep_shapes = False
    grouped: dict[str, list[float]] = {}
    for sql, (count, seconds) in probe.statements.items():
        shape = grouped.setdefault(sql_shape(sql)[:150], [0, 0.0])
        shape[0] += count
        shape[1] += seconds
    shapes = sorted(grouped.items(), key=lambda item: -item[1][1])
    profile_text = None
    median = statistics.median(t.total_ms for t in ticks)
    if args.profile or median > TARGET_MEDIAN_MS:
        say(f"[{args.db}] profiling {args.profile_ticks} further ticks with cProfile ...")
        profile_text = profile_ticks(probe, times, now, args.profile_ticks)
    say(f"[{args.db}] calibrating single operations ...")
    yardstick = calibrate()
    return {
        "db": args.db,
        "calibration_us": yardstick,
        "machine": {"cpus": os.cpu_count(), "load_before": load_before, "load_after": os.getloadavg()[0]},
        "vendor": connection.vendor,
        "server_version": server_version(),
        "code": code_version(),
        "fleet": asdict(fleet),
        "step_s": args.step,
        "ticks": [asdict(t) for t in ticks],
        "statements": [
            {"shape": shape, "per_tick": count / len(ticks), "ms_per_tick": seconds * 1000 / len(ticks)}
            for shape, (count, seconds) in shapes[:15]
        ],
        "profile": profile_text,
    }


def calibrate(n: int = 200) -> dict[str, float]:
    """What single operations cost on this machine right now, in microseconds: a yardstick for the tick."""
    from django.db import connection, transaction

    from jobs import tasks
    from jobs.models import Disk, Run

    pk = Run.objects.values_list("pk", flat=True).first()
    disk = Disk.objects.exclude(disk_type="custom").first()

    def per_call(function: Callable[[], Any], count: int = n) -> float:
        function()
        t0 = time.perf_counter()
        for _ in range(count):
            function()
        return (time.perf_counter() - t0) / count * 1e6

    def raw() -> None:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()

    def update() -> None:
        with transaction.atomic():
            Run.objects.filter(pk=pk, state="none").update(explanation="x")

    return {
        "raw SELECT 1 through Django's cursor": per_call(raw),
        "ORM Run.objects.filter(pk=...).first()": per_call(lambda: Run.objects.filter(pk=pk).first()),
        "ORM conditional UPDATE in atomic()": per_call(update),
        "pure Python: sum of 10^6 squares": per_call(lambda: sum(i * i for i in range(1_000_000)), 5),
        "disk.limits(block_size=4096).as_dict()": per_call(lambda: disk.limits(block_size=4096).as_dict()),
        "Celery publish (jobs.health.apply_async)": per_call(lambda: tasks.health.apply_async(), 100),
    }


def profile_ticks(probe: Probe, times: Iterator[datetime], now: datetime, count: int) -> str:
    profiler = cProfile.Profile()
    for _ in range(count):
        profiler.enable()
        one_tick(probe, now)
        profiler.disable()
        following = next(times)
        play_workers(now, following)
        now = following
    out = io.StringIO()
    out.write(f"cProfile over {count} further ticks (profiling roughly doubles the times).\n")
    out.write("benchweb's own functions by cumulative time:\n")
    pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(r"/jobs/[a-z_]+\.py", 25)
    out.write("everything by internal time:\n")
    pstats.Stats(profiler, stream=out).strip_dirs().sort_stats("tottime").print_stats(20)
    # pstats pads with blank lines and repeats the header: keep the tables, drop the noise.
    prefixes = (sysconfig.get_paths()["purelib"] + "/", str(ROOT) + "/")
    lines = [functools.reduce(lambda text, prefix: text.replace(prefix, ""), prefixes, line)
             for line in out.getvalue().splitlines() if line.strip()]  # fmt: skip
    return "\n".join(line for line in lines if "function calls" not in line and "List reduced" not in line)


# ----------------------------------------------------------------------------------------- output


def _stats(values: list[float]) -> tuple[float, float, float]:
    return statistics.median(values), p95_rounded(values), max(values)


def print_report(results: list[dict[str, Any]], per_tick: bool) -> bool:
    ok_all = True
    summary = []
    for r in results:
        ticks = r["ticks"]
        f = r["fleet"]
        n = len(ticks)
        print(f"== {r['server_version']}: {f['schedules']} enabled schedules, {f['hosts']} hosts, {f['disks']} disks, "
              f"{f['history']} finished runs; {n} ticks {r['step_s']:g} s apart ==")  # fmt: skip
        print(f"code: {r['code']}")
        m = r["machine"]
        costs = "; ".join(f"{name} {us:.0f} us" for name, us in r["calibration_us"].items())
        print(f"machine: {m['cpus']} CPUs, 1-minute load average {m['load_before']:.2f} before the ticks, "
              f"{m['load_after']:.2f} after; single operations: {costs}")  # fmt: skip
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(r["fleet"]["kinds"].items()))
        print(f"schedules: {kinds} ({f['adjusted']} re-drawn to pass scheduling.validate)")
        rows: list[tuple[str, list[float], str]] = [
            ("tick total (dispatcher.tick)", [t["total_ms"] for t in ticks], "ms"),
            ("  CPU time of this process", [t["cpu_ms"] for t in ticks], "ms"),
            ("  connect (as in a worker)", [t["connect_ms"] for t in ticks], "ms"),
            ("  materialise", [t["steps_ms"].get("materialise", 0) for t in ticks], "ms"),
            ("  expire_outside_window", [t["steps_ms"].get("expire", 0) for t in ticks], "ms"),
            ("  dispatch_due", [t["steps_ms"].get("dispatch_due", 0) for t in ticks], "ms"),
            ("  sweep", [t["steps_ms"].get("sweep", 0) for t in ticks], "ms"),
            ("materialise + dispatch_due",
             [t["steps_ms"].get("materialise", 0) + t["steps_ms"].get("dispatch_due", 0) for t in ticks], "ms"),
            ("SQL statements", [t["queries"] for t in ticks], ""),
            ("time in SQL (driver + DB)", [t["sql_ms"] for t in ticks], "ms"),
            ("launch publishes to redis", [t["publishes"] for t in ticks], ""),
            ("time publishing", [t["publish_ms"] for t in ticks], "ms"),
            ("schedules due", [t["due_schedules"] for t in ticks], ""),
            ("  as % of all schedules", [100 * t["due_schedules"] / f["schedules"] for t in ticks], "%"),
            ("runs created", [t["created"] for t in ticks], ""),
            ("runs claimed (queued)", [t["claimed"] for t in ticks], ""),
            ("runs due but waiting (busy)", [t["waiting_after"] for t in ticks], ""),
            ("materialise per due schedule",
             [t["steps_ms"].get("materialise", 0) / t["due_schedules"] for t in ticks if t["due_schedules"]], "ms"),
            ("dispatch_due per claimed run",
             [t["steps_ms"].get("dispatch_due", 0) / t["claimed"] for t in ticks if t["claimed"]], "ms"),
            ("publish per launch message", [t["publish_ms"] / t["publishes"] for t in ticks if t["publishes"]], "ms"),
        ]  # fmt: skip
        print(f"{'':<32}{'median':>10}{'p95':>10}{'max':>10}{'min':>10}")
        for label, values, unit in rows:
            if not values:  # e.g. per due schedule when no tick found one due
                print(f"{label:<32}{'-':>10}{'-':>10}{'-':>10}{'-':>10}  {unit}")
                continue
            med, p95, top = _stats(values)
            print(f"{label:<32}{med:>10.1f}{p95:>10.1f}{top:>10.1f}{min(values):>10.1f}  {unit}")
        if per_tick:
            print(f"\n{'now (UTC)':<27}{'total':>8}{'conn':>7}{'mat':>7}{'disp':>7}{'exp':>6}{'swp':>6}"
                  f"{'sql#':>6}{'sqlms':>7}{'pub':>5}{'due':>5}{'new':>5}{'clm':>5}{'wait':>6}")  # fmt: skip
            for t in ticks:
                s = t["steps_ms"]
                print(f"{t['now']:<27}{t['total_ms']:>8.1f}{t['connect_ms']:>7.1f}{s.get('materialise', 0):>7.1f}"
                      f"{s.get('dispatch_due', 0):>7.1f}{s.get('expire', 0):>6.1f}{s.get('sweep', 0):>6.1f}"
                      f"{t['queries']:>6}{t['sql_ms']:>7.1f}{t['publishes']:>5}{t['due_schedules']:>5}"
                      f"{t['created']:>5}{t['claimed']:>5}{t['waiting_after']:>6}")  # fmt: skip
        med, p95, _ = _stats([t["total_ms"] for t in ticks])
        ok = med <= TARGET_MEDIAN_MS
        ok_all &= ok
        summary.append((r["db"], med, p95, ok))
        print("\nstatements by total time (per tick, over the measured ticks):")
        print(f"{'count':>7}{'ms':>8}  statement")
        for st in r["statements"]:
            print(f"{st['per_tick']:>7.1f}{st['ms_per_tick']:>8.2f}  {st['shape']}")
        if r["profile"]:
            print("\n" + r["profile"])
        print()
    print(f"{'database':<10}{'median ms':>11}{'p95 ms':>9}   target: median <= {TARGET_MEDIAN_MS:g} ms")
    for db, med, p95, ok in summary:
        print(f"{db:<10}{med:>11.1f}{p95:>9.1f}   {'PASS' if ok else 'FAIL'}")
    return ok_all


# ----------------------------------------------------------------------------------------- entry point


def run_both(args: argparse.Namespace, argv: list[str]) -> int:
    results = []
    for status, out in each_database(__file__, argv):
        if status in (2, 130) or not out.strip():
            return status or 2
        results.append(json.loads(out)[0])
    if args.json:
        print(json.dumps(results, indent=2))
        return verdict_status(args, all(statistics.median(t["total_ms"] for t in r["ticks"]) <= TARGET_MEDIAN_MS
                                        for r in results))  # fmt: skip
    return verdict_status(args, print_report(results, args.per_tick))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_database_options(parser, DEFAULT_PG_URL)
    parser.add_argument("--schedules", type=int, default=1000)
    parser.add_argument("--history", type=int, default=20000, help="finished runs already in the database")
    parser.add_argument("--ticks", type=int, default=30, help="measured ticks (default 30)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed ticks first (default 3)")
    parser.add_argument("--step", type=float, default=60.0, help="simulated seconds between ticks (default 60)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--per-tick", action="store_true", help="also print one line per tick")
    parser.add_argument("--profile", action="store_true", help="cProfile further ticks even when the target is met")
    parser.add_argument("--profile-ticks", type=int, default=10)
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    add_smoke_option(parser, db="sqlite", schedules=TEAMS, history=100, ticks=2, warmup=0, profile_ticks=2)
    args = parse_args(parser, argv)
    if args.schedules < TEAMS or args.ticks < 1 or args.warmup < 0 or args.step <= 0:
        parser.error(f"need --schedules >= {TEAMS}, --ticks >= 1, --warmup >= 0, --step > 0")
    interrupt_on_signals()
    if args.db == "both":
        try:
            return run_both(args, argv)
        except KeyboardInterrupt:
            return 130
    stack = Stack(f"benchweb-dispatch-{args.db}-")
    status, result = run_guarded(f"dispatcher_cost [{args.db}]", stack, lambda: measure(args, stack))
    if result is None:
        return status
    if args.json:
        print(json.dumps([result]))
        return verdict_status(args, statistics.median(t["total_ms"] for t in result["ticks"]) <= TARGET_MEDIAN_MS)
    return verdict_status(args, print_report([result], args.per_tick))


if __name__ == "__main__":
    sys.exit(main())
