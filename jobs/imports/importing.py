"""Parsing pasted output and storing it as a run of its own."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from jobs.models import Disk, Run, RunResult, RunSample
from jobs.runs import lifecycle, queueing
from jobs.tools import detect
from jobs.tools.summary import ParseError, ParseResult


def parse_import(text: str, tool: str = "auto") -> ParseResult:
    """Parse pasted or uploaded tool output; ParseError says why it cannot be read."""
    fmt = detect.detect_format(text)
    if tool == "fio" and not fmt.startswith("fio"):
        raise ParseError(f"this looks like {fmt} output, not fio; use --tool auto or ndisk64")
    if tool == "ndisk64" and fmt != "ndisk64":
        raise ParseError(f"this looks like {fmt} output, not ndisk64; use --tool auto or fio")
    return detect.parse_output(text, fmt)


EARLIEST_IMPORT = datetime(1970, 1, 1, tzinfo=UTC)


def import_result(disk: Disk, text: str, *, name: str, at: Any = None, user: Any = None, tool: str = "auto") -> Run:
    """Store existing tool output as a finished run of the disk (trigger 'import'), with its raw text."""
    finished = at or timezone.now()
    if finished < EARLIEST_IMPORT:
        # The charts count in ms since 1970, and a date near year 1 minus the runtime is no date at all.
        raise queueing.RunRefused("finished_at", f"{finished.isoformat()} is before 1970: give when the run finished.")
    parsed = parse_import(text, tool)
    summary = parsed.summary_with_bins()
    runtime = summary.get("runtime_s")
    block_size = summary.get("block_size_bytes")
    snapshot = disk.limits_snapshot(block_size)
    errors = "; ".join(f"job {e['job']} error {e['errno']}" for e in parsed.job_errors)
    with transaction.atomic():
        run = Run.objects.create(
            disk=disk,
            profile_name=f"import: {name}"[:100],
            parameters={"tool": summary["tool"], "format": parsed.format, "source": name, "settings": parsed.settings},
            trigger=Run.Trigger.IMPORT,
            created_by=user if getattr(user, "is_authenticated", False) else None,
            state=Run.State.FAILED if errors else Run.State.SUCCEEDED,
            explanation=f"the imported output reports an error: {errors}" if errors else f"imported from {name}",
            started_at=finished - timedelta(seconds=runtime) if runtime else finished,
            finished_at=finished,
            raw_output=text,
            summary=lifecycle.stored_summary(summary),
            limits_snapshot=snapshot,
        )
        RunSample.store(run, summary.get("samples", []))
        RunResult.record(run)
    return run
