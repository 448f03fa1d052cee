# A run's bulky columns compressed with lz4 instead of PostgreSQL's default pglz (PostgreSQL 14 and later, built
# with lz4, as Debian's and the official images are). A 120 s fio run keeps ~900 KB of status documents in
# raw_output: pglz spent ~11 ms of the server's CPU a run on it and kept 233 KB, lz4 1.1 ms and 49 KB (measured on
# the capacity bench's recording, docs/operations/history.md). Values stored before keep pglz until rewritten: both
# read alike. A server without lz4 keeps pglz and says so in the migration's output; SQLite has nothing to change.

from __future__ import annotations

import sys
from typing import Any

from django.db import migrations, transaction
from django.db.utils import DatabaseError

COLUMNS = ("raw_output", "raw_stderr", "command", "summary", "environment")


def _compress(apps: Any, schema_editor: Any, method: str) -> None:
    connection = schema_editor.connection
    if connection.vendor != "postgresql":
        return
    try:
        with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
            for column in COLUMNS:
                cursor.execute(f'ALTER TABLE "jobs_run" ALTER COLUMN "{column}" SET COMPRESSION {method}')
    except DatabaseError as exc:  # e.g. "compression method lz4 not supported" (a server built without it)
        sys.stderr.write(f"\n  jobs_run's outputs keep PostgreSQL's default compression: {exc}".rstrip() + "\n")


def to_lz4(apps: Any, schema_editor: Any) -> None:
    _compress(apps, schema_editor, "lz4")


def to_default(apps: Any, schema_editor: Any) -> None:
    _compress(apps, schema_editor, "default")


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0044_run_backlog_since"),
    ]

    operations = [migrations.RunPython(to_lz4, to_default)]
