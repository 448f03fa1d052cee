"""A run's tool output as stored: a 120 s fio run keeps ~900 KB of status documents in raw_output. The state move
that stores it does not read it back (Run.reread keeps what it wrote), and on PostgreSQL the run's bulky columns
are compressed with lz4 (migration 0045), ten times cheaper for the server than its default pglz."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from jobs.models import Run
from jobs.runs.states import finish
from tests.factories import RunFactory


def _status_documents(seconds: int) -> str:
    """fio-like status documents, one a second: compressible, and far past PostgreSQL's 2 KB TOAST threshold."""
    return "\n".join(
        json.dumps({"fio version": "fio-3.33", "timestamp_ms": 1_700_000_000_000 + 1000 * t,
                    "jobs": [{"jobname": "benchweb", "read": {"iops": 20_000.0 + t / 3, "total_ios": 20_000 * t},
                              "write": {"iops": 8_500.0 - t / 7, "total_ios": 8_500 * t}}]}, indent=4)
        for t in range(1, seconds + 1)
    )  # fmt: skip


@pytest.mark.django_db
def test_finishing_a_run_keeps_its_output_as_written_and_does_not_read_it_back(disk):
    run = RunFactory(disk=disk, state=Run.State.COLLECTING)
    output = _status_documents(120)
    with CaptureQueriesContext(connection) as queries:
        assert finish(run, Run.State.SUCCEEDED, "", raw_output=output, raw_stderr="fio: one warning\n")
    this_run = f'WHERE "jobs_run"."id" = {run.pk}'
    reads = [q["sql"] for q in queries.captured_queries if q["sql"].startswith("SELECT") and this_run in q["sql"]]
    assert reads, "the move reads the run back (its other fields may have moved meanwhile)"
    assert not any("raw_output" in sql or "raw_stderr" in sql for sql in reads), reads
    assert run.state == Run.State.SUCCEEDED and run.finished_at is not None
    assert run.raw_output == output and run.raw_stderr == "fio: one warning\n"
    stored = Run.objects.get(pk=run.pk)
    assert stored.raw_output == output and stored.raw_stderr == "fio: one warning\n"


@pytest.mark.django_db
@pytest.mark.skipif("connection.vendor != 'postgresql'", reason="column compression is PostgreSQL's")
def test_a_runs_output_is_compressed_with_lz4_on_postgresql(disk):
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT attname, attcompression FROM pg_attribute WHERE attrelid = 'jobs_run'::regclass "
            "AND attname IN ('raw_output', 'raw_stderr', 'command', 'summary', 'environment')"
        )
        assert dict(cursor.fetchall()) == dict.fromkeys(
            ("raw_output", "raw_stderr", "command", "summary", "environment"), "l"
        )
    run = RunFactory(disk=disk, state=Run.State.COLLECTING)
    output = _status_documents(120)
    assert finish(run, Run.State.SUCCEEDED, "", raw_output=output)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_column_compression(raw_output), pg_column_size(raw_output), octet_length(raw_output) "
            "FROM jobs_run WHERE id = %s",
            [run.pk],
        )
        method, stored_bytes, text_bytes = cursor.fetchone()
    assert method == "lz4"
    assert text_bytes == len(output.encode()) and stored_bytes < text_bytes / 5
