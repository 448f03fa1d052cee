"""The days a disk chart of a long range is drawn from (jobs/results/series.py): a row a profile and UTC day,
holding that day's lowest and highest run of every series (RunResultDay, kept as each result is recorded), read
as the database stores them for the range's whole days and computed from the results for a day the range cuts.

A day is DAY_KEY, then timeseries.DAY_POINTS: per series its early run's fields, then its late run's (AT says
where each series starts); a profile's days come as the columns of their keys and their points packed
(timeseries.pack_day_points), which the chart unpacks only as the points it draws."""

from __future__ import annotations

import itertools
import operator
from collections.abc import Iterable
from contextlib import nullcontext
from datetime import datetime, timedelta
from typing import Any, cast

import psycopg
from django.db import connection
from django.db.models import F, Q, QuerySet

from jobs import timeseries
from jobs.models import Disk, RunResult, RunResultDay
from jobs.timeseries import SERIES

DAY_KEY = ("profile_id", "profile_name", "day", "runs", "first_run", "last_run")


D = {name: index for index, name in enumerate(DAY_KEY)}


def _offsets() -> dict[str, int]:
    offsets, at = {}, len(DAY_KEY)
    for series in SERIES:
        offsets[series] = at
        at += 2 * len(timeseries.day_point_fields(series))
    return offsets


AT = _offsets()


# A profile's days' keys as columns, DAY_KEY each in day order: no day is held as an object of its own.
Columns = list[list[Any]]
# (profile id, profile name, its days' keys, their points packed, in the same order)
ProfileDays = tuple[int | None, str, Columns, list[bytes]]


def day_columns(disk: Disk, start: datetime | None, end: datetime | None, wanted: dict[str, Any]) -> list[ProfileDays]:
    """The range's days, per profile id and name (by id, then name; no id last): whole days as stored, and a
    day the range cuts computed here from its results inside the range."""
    first, last = _whole_days(start, end)
    days = RunResultDay.objects.filter(disk=disk, **wanted)
    if first is not None:
        days = days.filter(day__gte=first)
    if last is not None:
        days = days.filter(day__lte=last)
    profiles = _stored(days)
    cut = _cut_days(start, end, first, last)
    if cut is None:
        return profiles
    results = RunResult.objects.filter(cut, disk=disk, **wanted)
    results = results.order_by("profile_id", "profile_name", "finished_ms", "run_id")
    return _with_cut_days(profiles, results.values_list("profile_id", "profile_name", *RunResult.DAY_COLUMNS))


def _stored(days: QuerySet[RunResultDay]) -> list[ProfileDays]:
    """The stored days: their key columns and their packed points as read. Nothing is made per day (not even a key
    to group by): the garbage collector, which runs every few hundred new lists and tuples, would walk them."""
    # Named for what the packed points carry besides each run's time and value (the stamps tests look for the
    # flags in the day rows' query).
    keyed = days.annotate(points_steady_warnings=F("points")).order_by("profile_id", "profile_name", "day")
    rows = _fetched(keyed.values_list(*DAY_KEY, "points_steady_warnings"))
    profiles: list[ProfileDays] = []
    for profile_id, name, start, stop in _profile_spans(rows):
        # Column by column in C (zip(*rows) would make an iterator a day).
        keys = [list(map(operator.itemgetter(i), rows[start:stop])) for i in range(len(DAY_KEY))]
        profiles.append((profile_id, name, keys, list(map(operator.itemgetter(-1), rows[start:stop]))))
    # The database sorted them only to bring each profile's days together: its order of names is its collation's.
    return sorted(profiles, key=_profile_order)


def _profile_spans(rows: list[tuple[Any, ...]]) -> list[tuple[int | None, str, int, int]]:
    """(profile id, name, first row, row after its last) of each run of rows of one profile id and name."""
    spans = []
    start = 0
    # Grouped in C: a Python step a row cost an all-time chart's 4,386 days a millisecond.
    for (profile_id, name), group in itertools.groupby(map(operator.itemgetter(0, 1), rows)):
        stop = start + len(list(group))
        spans.append((profile_id, name, start, stop))
        start = stop
    return spans


def _with_cut_days(profiles: list[ProfileDays], results: Iterable[tuple[Any, ...]]) -> list[ProfileDays]:
    """The stored days with the days the range cuts, each computed from its results (profile id and name, then
    RunResult.DAY_COLUMNS, in profile and time order)."""
    rows = {(profile_id, name): [*zip(*keys, packed, strict=True)] for profile_id, name, keys, packed in profiles}
    for (profile_id, name, day), group in itertools.groupby(
        results, key=lambda row: (row[0], row[1], timeseries.utc_day(row[3]))
    ):
        runs = [row[2:] for row in group]
        extremes = timeseries.day_extremes(runs)
        points = timeseries.pack_day_points(extremes | timeseries.day_flags(runs, extremes))
        rows.setdefault((profile_id, name), []).append((*_day_key(profile_id, name, day, extremes), points))
    return [as_columns(*profile, rows[profile]) for profile in sorted(rows, key=_profile_order)]


def as_columns(profile_id: int | None, name: str, rows: list[tuple[Any, ...]]) -> ProfileDays:
    """A profile's days out of rows (DAY_KEY, then the points packed), in day order."""
    *keys, packed = map(list, zip(*sorted(rows, key=operator.itemgetter(D["day"])), strict=True))
    return profile_id, name, keys, packed


def _fetched(rows: QuerySet[Any, tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """The rows as the database driver gives them, without Django's converters, which make a Python call of
    every cell."""
    sql, params = rows.query.sql_with_params()
    with connection.cursor() as cursor:
        if connection.vendor != "postgresql":
            cursor.execute(sql, params)
            return cursor.fetchall()
        # In psycopg's binary format, numbers and bytes come as bytes to copy rather than text to parse. Django's
        # cursor (binding on the client) cannot ask for it; the query is still logged as Django's are where they
        # are (tests count them).
        logged = cast("Any", cursor).debug_sql(sql, params) if connection.queries_logged else nullcontext()
        with logged, psycopg.Cursor(connection.connection) as binary:
            binary.execute(sql, params, binary=True)
            return binary.fetchall()


def _profile_order(key: tuple[Any, ...]) -> tuple[bool, int, str]:
    """By profile id, then name; days with no profile id last."""
    return key[0] is None, key[0] or 0, key[1]


def _day_key(profile_id: int | None, name: str, day: int, extremes: dict[str, Any]) -> tuple[Any, ...]:
    """The DAY_KEY of a day computed here rather than stored."""
    return profile_id, name, day, extremes["runs"], extremes["first_run"], extremes["last_run"]


def _whole_days(start: datetime | None, end: datetime | None) -> tuple[int | None, int | None]:
    """The first and last UTC day wholly inside [start, end] (None: open)."""
    first = last = None
    if start:
        first = timeseries.utc_day(timeseries.epoch_ms(start))
        if start > timeseries.midnight(first):
            first += 1
    if end:
        # Finish times are whole microseconds: `end` includes a day that ends a microsecond after it.
        last = timeseries.utc_day(timeseries.epoch_ms(end + timedelta(microseconds=1))) - 1
    return first, last


def _cut_days(start: datetime | None, end: datetime | None, first: int | None, last: int | None) -> Q | None:
    """The parts of [start, end] outside its whole days, as a filter of results (None: there are none)."""
    if first is not None and last is not None and first > last:
        return Q(finished_at__gte=start, finished_at__lte=end)
    cut = Q()
    if start and first is not None and start < timeseries.midnight(first):
        cut |= Q(finished_at__gte=start, finished_at__lt=timeseries.midnight(first))
    if end and last is not None and end >= timeseries.midnight(last + 1):
        cut |= Q(finished_at__gte=timeseries.midnight(last + 1), finished_at__lte=end)
    return cut or None
