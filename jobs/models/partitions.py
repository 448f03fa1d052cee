"""Month partitions of the per-second tables on PostgreSQL (docs/operations/history.md).

RunSample (keyed by `month`, the first day of its run's creation month) and HostSample (keyed by `at`) are
partitioned by range, one table a month named `<table>_pYYYYMM`, plus `<table>_default` that takes whatever
arrives before its month's table exists, so that a write never fails for want of one. `ensure` makes a month's
table and moves into it the rows of that month the default partition caught (the split); storing a run's samples
and the host's second call it for their month and the next, so a month's table is normally made a month ahead and
the default stays empty. Retention (jobs/runs/retention.py) drops a month whole with `drop`.

On SQLite the tables are plain and every function here does nothing.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime

from django.db import connection, transaction

# The partitioned tables and their partition key.
KEYS = {"jobs_runsample": "month", "jobs_hostsample": "at"}
_NAME = re.compile(r"^(?P<table>\w+)_p(?P<year>\d{4})(?P<month>\d{2})$")
# (table, month) pairs this process has seen made: a write checks here before it asks the catalog.
_made: set[tuple[str, date]] = set()


def partitioned() -> bool:
    return connection.vendor == "postgresql"


def month_of(moment: datetime | date) -> date:
    """The first day of the moment's month, in UTC."""
    if isinstance(moment, datetime):
        moment = moment.astimezone(UTC) if moment.tzinfo else moment
    return date(moment.year, moment.month, 1)


def next_month(month: date) -> date:
    return date(month.year + month.month // 12, month.month % 12 + 1, 1)


def name(table: str, month: date) -> str:
    return f"{table}_p{month:%Y%m}"


def months(table: str) -> list[tuple[str, date]]:
    """(partition, month) of the table's month partitions, oldest first; [] on SQLite."""
    if not partitioned():
        return []
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
            "WHERE i.inhparent = %s::regclass",
            [table],
        )
        found = [_NAME.match(row[0]) for row in cursor.fetchall()]
    return sorted((m.group(0), date(int(m["year"]), int(m["month"]), 1)) for m in found if m and m["table"] == table)


def ensure_ahead(table: str, moment: datetime | date) -> None:
    """The partitions of the moment's month and the next exist (ensure)."""
    month = month_of(moment)
    ensure(table, month)
    ensure(table, next_month(month))


def ensure(table: str, month: date) -> None:
    """The table's partition of `month` exists, holding the rows of that month the default partition caught."""
    if not partitioned() or (table, month) in _made:
        return
    part, key = name(table, month), KEYS[table]
    low, high = _bound(table, month), _bound(table, next_month(month))
    with transaction.atomic(), connection.cursor() as cursor:
        # One maker at a time; a second finds the table made and stops.
        cursor.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [table])
        cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [part])
        if not cursor.fetchone()[0]:
            # Writes of this month wait for the split rather than land in the default partition behind it.
            cursor.execute(f'LOCK TABLE "{table}_default" IN SHARE ROW EXCLUSIVE MODE')
            cursor.execute(f'CREATE TABLE "{part}" (LIKE "{table}" INCLUDING DEFAULTS INCLUDING CONSTRAINTS)')
            cursor.execute(
                f'WITH moved AS (DELETE FROM "{table}_default" WHERE "{key}" >= %s AND "{key}" < %s RETURNING *) '  # noqa: S608  (names of our own)
                f'INSERT INTO "{part}" SELECT * FROM moved',
                [low, high],
            )
            # The table's indexes and foreign keys are made on the partition as it is attached.
            cursor.execute(f'ALTER TABLE "{table}" ATTACH PARTITION "{part}" FOR VALUES FROM (%s) TO (%s)', [low, high])
        # Remembered once it is there for every connection: a transaction rolled back takes the table with it.
        transaction.on_commit(lambda: _made.add((table, month)))


def rows(part: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute(f'SELECT count(*) FROM "{part}"')  # noqa: S608  (a partition's name, from the catalog)
        return cursor.fetchone()[0]


def drop(table: str, part: str) -> int:
    """Detach the partition from the table and drop it; the rows it held."""
    with transaction.atomic(), connection.cursor() as cursor:
        held = rows(part)
        # A table cannot be dropped with foreign-key checks of rows written in this transaction still pending
        # (Django's are deferred to the commit): they are made now, and deferred again after.
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute(f'ALTER TABLE "{table}" DETACH PARTITION "{part}"')
        cursor.execute(f'DROP TABLE "{part}"')
        cursor.execute("SET CONSTRAINTS ALL DEFERRED")
    m = _NAME.match(part)
    if m:
        _made.discard((table, date(int(m["year"]), int(m["month"]), 1)))
    return held


def _bound(table: str, month: date) -> str:
    return f"{month:%Y-%m-%d}" + (" 00:00:00+00" if KEYS[table] == "at" else "")
