"""Compliance read from the day rollup (RunResultDay's promise columns) and one coded scan gives exactly what one
plain pass over every result gives, for random histories, periods cut mid-day, profiles and tolerances; and the
days a run's recording keeps are the days a rebuild makes."""

from __future__ import annotations

import itertools
import random
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from jobs import timeseries
from jobs.models import Disk, Run, RunResult, RunResultDay
from jobs.results import compliance
from tests.builders import disk_at_migration, own_database
from tests.factories import RunFactory, fio_summary

NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
PROFILES = ("4k read", "4k write", "=1M seq")
DAY_FIELDS = ("profile_name", "day", "runs", "first_ms", "last_ms", "promised", "no_promise", "limit_min",
              "limit_max")  # fmt: skip

pytestmark = pytest.mark.django_db


def _history(disk: Disk, rng: random.Random, n: int) -> list[RunResult]:
    """n results over 20 days: some at midnight, some sharing a finish, some with no limit or a zero limit, a
    limit that changes, a missing total, IOPS around the limit so that the tolerance decides."""
    moments: list[datetime] = []
    for _ in range(n):
        roll = rng.random()
        if roll < 0.05:
            at = NOW.replace(hour=0) - timedelta(days=rng.randrange(20))
        elif roll < 0.1 and moments:
            at = rng.choice(moments)
        else:
            at = NOW - timedelta(seconds=rng.randrange(20 * 86_400), microseconds=rng.randrange(1_000_000))
        moments.append(at)
    runs = [
        RunFactory(disk=disk, state=Run.State.SUCCEEDED, profile_name=rng.choice(PROFILES), finished_at=at,
                   started_at=at - timedelta(seconds=60), summary=fio_summary())
        for at in moments
    ]  # fmt: skip
    results = []
    for run in runs:
        assert run.finished_at is not None
        limit = rng.choice([4000.0] * 6 + [3000.0, 0.0, None])
        total = None if rng.random() < 0.03 else 4000.0 * rng.uniform(0.5, 1.2)
        results.append(RunResult(
            run=run, disk_id=disk.pk, profile_name=run.profile_name, finished_at=run.finished_at,
            finished_ms=timeseries.epoch_ms(run.finished_at), total_iops=total, read_iops=total, limit_iops=limit,
        ))  # fmt: skip
    RunResult.objects.bulk_create(results)
    RunResultDay.rebuild(disk)
    return results


def _iso(moment: datetime | None) -> str | None:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z") if moment else None


def _plainly(results: list[RunResult], query: compliance.Query) -> dict[str, Any]:
    """The answer from every result in one pass, in Python: what the rollup must equal."""
    since, until = query.since, query.until
    rows = [
        r for r in results
        if (since is None or r.finished_at >= since) and (until is None or r.finished_at < until)
        and (not query.profile or r.profile_name == query.profile)
    ]  # fmt: skip
    promised = sorted((r for r in rows if r.limit_iops and r.limit_iops > 0 and r.total_iops is not None),
                      key=lambda r: (r.finished_at, r.run_id))  # fmt: skip
    missed = [r.total_iops < r.limit_iops * query.threshold for r in promised]  # type: ignore[operator]
    streak, best, best_end = 0, 0, -1
    for i, miss in enumerate(missed):
        streak = streak + 1 if miss else 0
        if streak and streak >= best:
            best, best_end = streak, i
    hours: dict[int, list[float]] = {}
    for r in promised:
        hour = hours.setdefault(r.finished_ms // 3_600_000 % 24, [0, 0.0])
        hour[0] += 1
        hour[1] += r.total_iops / r.limit_iops  # type: ignore[operator]
    worst = min(hours.items(), key=lambda item: (item[1][1] / item[1][0], item[0]), default=None)
    by_profile = {}
    for name in sorted({r.profile_name for r in rows}):
        mine = [(r, m) for r, m in zip(promised, missed, strict=True) if r.profile_name == name]
        by_profile[name] = (
            len(mine),
            sum(m for _, m in mine),
            sum(1 for r in rows if r.profile_name == name and (r.limit_iops is None or r.limit_iops <= 0)),
        )
    limits: dict[str, set[float]] = {}
    for r in promised:
        limits.setdefault(r.profile_name, set()).add(r.limit_iops)  # type: ignore[arg-type]
    return {
        "runs": len(promised),
        "below": sum(missed),
        "no_promise": sum(1 for r in rows if r.limit_iops is None or r.limit_iops <= 0),
        "first_run_at": _ms_iso(min((r.finished_at for r in rows), default=None)),
        "last_run_at": _ms_iso(max((r.finished_at for r in rows), default=None)),
        "streak": {
            "runs": best,
            "from": _ms_iso(promised[best_end - best + 1].finished_at) if best else None,
            "to": _ms_iso(promised[best_end].finished_at) if best else None,
        },
        "worst_hour": (worst[0], int(worst[1][0])) if worst else None,
        "mean_efficiency": sum(r.total_iops / r.limit_iops for r in promised) / len(promised) if promised else None,  # type: ignore[operator]
        "by_profile": by_profile,
        "changed": any(len(found) > 1 for found in limits.values()),
    }


def _ms_iso(moment: datetime | None) -> str | None:
    """A finish as the answer writes it: in whole milliseconds, as the results keep it."""
    return _iso(timeseries.EPOCH + timedelta(milliseconds=timeseries.epoch_ms(moment))) if moment else None


def _asked(rng: random.Random) -> dict[str, str]:
    roll = rng.random()
    params: dict[str, str] = {}
    if roll < 0.2:
        params["period"] = rng.choice(["7d", "30d", "all"])
    elif roll < 0.35:
        day = (NOW - timedelta(days=rng.randrange(1, 18))).date()
        params["since"] = day.isoformat()
        params["until"] = (day + timedelta(days=rng.randrange(0, 6))).isoformat()
    else:
        since = NOW - timedelta(seconds=rng.randrange(21 * 86_400))
        params["since"] = since.strftime("%Y-%m-%dT%H:%M:%SZ")
        if rng.random() < 0.6:
            span = timedelta(seconds=rng.randrange(1, 10 * 86_400))
            params["until"] = (since + span).strftime("%Y-%m-%dT%H:%M:%SZ")
    if rng.random() < 0.3:
        params["profile"] = rng.choice(PROFILES)
    if rng.random() < 0.5:
        params["tolerance"] = str(rng.choice([0, 2.5, 5, 10, 20, 50]))
    return params


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_rollup_answers_exactly_what_every_result_answers(disk, seed):
    rng = random.Random(seed)
    results = _history(disk, rng, 160)
    for _ in range(40):
        params = _asked(rng)
        query = compliance.parse(params, now=NOW)
        got = compliance.disk_compliance(disk, query)
        want = _plainly(results, query)
        assert (got["runs"], got["below"], got["no_promise"]) == (want["runs"], want["below"], want["no_promise"]), (
            params
        )
        assert (got["first_run_at"], got["last_run_at"]) == (want["first_run_at"], want["last_run_at"]), params
        assert got["longest_streak"] == want["streak"], params
        hour = got["worst_hour"]
        assert ((hour["hour"], hour["runs"]) if hour else None) == want["worst_hour"], params
        if want["mean_efficiency"] is None:
            assert got["mean_efficiency"] is None
        else:
            assert got["mean_efficiency"] == pytest.approx(want["mean_efficiency"], rel=1e-12)
        listed = {p["profile"]: (p["runs"], p["below"], p["no_promise"]) for p in got["by_profile"]}
        assert listed == want["by_profile"], params
        if got["limit"] is not None:
            assert got["limit"]["changed"] == want["changed"], params


def test_the_days_a_run_keeps_as_it_is_recorded_are_the_days_a_rebuild_makes(disk):
    rng = random.Random(7)
    for i in range(30):
        at = NOW - timedelta(hours=rng.randrange(24 * 5), minutes=rng.randrange(60))
        iops = rng.choice([1000.0, 3900.0, 4000.0, 4500.0])
        run = RunFactory(disk=disk, state=Run.State.SUCCEEDED, profile_name=PROFILES[i % 2], finished_at=at,
                         started_at=at - timedelta(seconds=60), summary=fio_summary(read_iops=iops),
                         limits_snapshot=disk.limits_snapshot(block_size=4096) if i % 5 else {})  # fmt: skip
        RunResult.record(run)

    def days() -> list[tuple[Any, ...]]:
        rows = RunResultDay.objects.filter(disk=disk).order_by("profile_name", "day")
        return [(*row[:-1], round(row[-1], 12)) for row in rows.values_list(*DAY_FIELDS, "h13_runs", "h02_runs",
                                                                              "efficiency_sum")]  # fmt: skip

    recorded = days()
    assert sum(row[DAY_FIELDS.index("promised")] for row in recorded) > 0
    RunResultDay.rebuild(disk)
    assert days() == recorded


@pytest.mark.slow  # shared: its own database migrated from nothing (tests.builders.own_database)
@pytest.mark.django_db(transaction=True)
def test_migration_0016_gives_the_stored_days_what_compliance_reads_of_them():
    before, after = [("jobs", "0015_changepoints")], [("jobs", "0016_compliance_days")]
    with own_database():
        old, disk = disk_at_migration(before)
        team = disk.team
        Run, Result, Day = (old.get_model("jobs", name) for name in ("Run", "RunResult", "RunResultDay"))
        rows = []
        for i, iops in enumerate([4000.0, 1000.0, 1000.0, 3900.0, None, 4100.0]):
            at = NOW - timedelta(hours=7 * i)
            run = Run.objects.create(team=team, disk=disk, state="succeeded", profile_name="p", finished_at=at)
            ms = timeseries.epoch_ms(at)
            Result.objects.create(run=run, disk=disk, profile_name="p", finished_at=at, finished_ms=ms,
                                  total_iops=iops, limit_iops=None if i == 5 else 4000.0)  # fmt: skip
            rows.append((run.pk, ms, iops))
        for day, group in itertools.groupby(sorted(rows, key=lambda r: r[1]), key=lambda r: timeseries.utc_day(r[1])):
            kept = list(group)
            Day.objects.create(disk=disk, profile_name="p", day=day, runs=len(kept), first_run=kept[0][0],
                               last_run=kept[-1][0], last_ms=kept[-1][1])  # fmt: skip

        MigrationExecutor(connection).migrate(after)
        # The days as 0016 left them (later migrations add columns the model of today reads).
        then = MigrationExecutor(connection).loader.project_state(after).apps
        days = then.get_model("jobs", "RunResultDay").objects.filter(disk_id=disk.pk)
        assert sum(days.values_list("promised", flat=True)) == 4 and sum(days.values_list("no_promise", flat=True)) == 1
        assert all(
            day.first_ms is not None and day.h12_runs + day.h05_runs + day.h22_runs for day in days if day.promised
        )
        # And what compliance reads of them once the later migrations have run too (today's code reads today's
        # schema: the samples' month partitions of 0039, say).
        MigrationExecutor(connection).migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
        migrated = Disk.objects.get(pk=disk.pk)
        got = compliance.disk_compliance(migrated, compliance.parse({"period": "all"}, now=NOW))
        assert (got["runs"], got["below"], got["no_promise"]) == (4, 2, 1)
        assert got["longest_streak"]["runs"] == 2 and got["worst_hour"] is not None
