"""Parsing pasted output and storing each of its results as a run of its own.

An output may hold several results (fio's stonewalled groups, each client of a client/server run and their
"All clients" total): each becomes its own run, never a sum. A run is named by the workload its output states
(rw, block size, queue depth and jobs), so imports of one workload form one chart series on a disk; the same
output on the same disk is refused as a duplicate of the first (Run.import_fingerprint).
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from jobs import errors, figures
from jobs.alerts import boundary
from jobs.alerts import evaluate as alerts
from jobs.analysis import steady
from jobs.models import Disk, Profile, Run, RunResult, RunSample, RunSet
from jobs.runs import storing
from jobs.tools import completion, detect
from jobs.tools.summary import ParseError, ParseResult


def _checked_format(text: str, tool: str) -> str:
    fmt = detect.detect_format(text)
    if tool == "fio" and not fmt.startswith("fio"):
        raise ParseError(f"this looks like {fmt} output, not fio; use --tool auto or ndisk64")
    if tool == "ndisk64" and fmt != "ndisk64":
        raise ParseError(f"this looks like {fmt} output, not ndisk64; use --tool auto or fio")
    return fmt


def parse_results(text: str, tool: str = "auto") -> list[ParseResult]:
    """Every result of pasted or uploaded tool output, in output order; ParseError says why it cannot be read,
    or why a result in it is no measurement (completion.not_measured: fio aborted, or no I/O)."""
    fmt = _checked_format(text, tool)
    parse_all = getattr(detect, "parse_all", None)  # the per-result parser; older trees have one result each
    results = list(parse_all(text, fmt)) if parse_all else [detect.parse_output(text, fmt)]
    said = completion.tool_lines(text)
    for result in results:
        # A job error is stored as a failed run with fio's errno and what it measured before it; an output
        # with nothing measured has nothing to store (the person still has the text), and on a chart or in
        # /metrics it would read as 0 IOPS.
        why = None if result.job_errors else completion.not_measured(result, tool=result.summary["tool"], said=said)
        if why:
            part = f" ({result.label})" if result.label else ""
            raise ParseError(f"This output{part} holds no measurement to store: {why.rstrip('.')}.")
    return results


def parse_import(text: str, tool: str = "auto") -> ParseResult:
    """The output's first result (what `import_results --dry-run` without --json prints one line of)."""
    return parse_results(text, tool)[0]


def normalised(text: str) -> str:
    """The text as the fingerprint sees it: LF line ends, no trailing blanks, no blank lines around it, so the
    same output pasted again (from another browser, with a stray newline) is the same output."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return "\n".join(line.rstrip() for line in lines).strip("\n")


def fingerprint(text: str, label: str) -> str:
    """Run.import_fingerprint: the sha256 of the normalised output and the result's label."""
    return hashlib.sha256(f"{normalised(text)}\0{label}".encode()).hexdigest()


def series_name(result: ParseResult, source: str) -> str:
    """The run's profile_name, which keys its chart series (jobs/results/series.py): the workload the output
    states, so imports of one workload form one series. Per-client results and their "All clients" total are
    different measurements of one workload, so their label is part of the name; groups differ by workload."""
    stated = figures.workload_name(result.summary.get("workload"), result.summary.get("block_size_bytes"))
    name = stated or f"import: {source}"
    if result.label and (not stated or not result.label.startswith("group")):
        name = f"{name} · {result.label}"
    return name[:100]


class DuplicateImport(ValueError):
    """This output (this result of it) is already stored on the disk; `first` is the run that holds it."""

    def __init__(self, first: Run, label: str = "") -> None:
        self.first = first
        part = f" ({label})" if label else ""
        when = first.created_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC") if first.created_at else ""
        super().__init__(
            f"This output{part} is already stored on {first.disk} as run {first.pk}"
            f"{f', imported {when}' if when else ''}; nothing was stored. Open run {first.pk}, or import "
            "another output."
        )


def duplicate_of(disk: Disk, text: str, label: str) -> Run | None:
    """The first run of the disk imported from this output and result, if any."""
    found = Run.objects.filter(disk=disk, import_fingerprint=fingerprint(text, label)).select_related("disk")
    return found.order_by("pk").first()


def pick(results: list[ParseResult], labels: Collection[str] | None) -> list[ParseResult]:
    """The results whose label is in labels (None: all of them); ParseError names an unknown label."""
    if labels is None:
        return results
    known = [result.label for result in results]
    unknown = [label for label in labels if label not in known]
    if unknown:
        listed = ", ".join(repr(label) for label in known)
        raise ParseError(f"no result labelled {unknown[0]!r} in this output; it holds {listed}.")
    return [result for result in results if result.label in labels]


EARLIEST_IMPORT = datetime(1970, 1, 1, tzinfo=UTC)


def import_results(
    disk: Disk,
    text: str,
    *,
    name: str,
    at: Any = None,
    user: Any = None,
    tool: str = "auto",
    labels: Collection[str] | None = None,
) -> list[Run]:
    """Store the output's results (those labelled in labels; None: all) as finished runs of the disk (trigger
    'import'), each with the raw text. DuplicateImport when one of them is already stored on the disk."""
    finished = at or timezone.now()
    if finished < EARLIEST_IMPORT:
        # The charts count in ms since 1970, and a date near year 1 minus the runtime is no date at all.
        raise errors.FieldRefused("finished_at", f"{finished.isoformat()} is before 1970: give when the run finished.")
    chosen = pick(parse_results(text, tool), labels)
    with transaction.atomic():
        # One import of a disk at a time, so that the same output saved twice at once is still stored once
        # (the same NO KEY lock RunResult.record takes; SQLite's IMMEDIATE transactions are one at a time).
        list(Disk.objects.select_for_update(no_key=True).filter(pk=disk.pk).values_list("pk"))
        return [store_result(disk, text, result, name=name, finished=finished, user=user) for result in chosen]


def import_result(
    disk: Disk, text: str, *, name: str, at: Any = None, user: Any = None, tool: str = "auto", label: str | None = None
) -> Run:
    """Store one result: the one labelled label, or the output's only one (ParseError when it holds several)."""
    if label is None:
        results = parse_results(text, tool)
        if len(results) > 1:
            listed = ", ".join(repr(result.label) for result in results)
            raise ParseError(f"this output holds {len(results)} results ({listed}); choose one by its label.")
        label = results[0].label
    (run,) = import_results(disk, text, name=name, at=at, user=user, tool=tool, labels=[label])
    return run


def same_workload_profile(disk: Disk, parsed: ParseResult) -> Profile | None:
    """The profile whose runs on this disk measured the workload this result states, when exactly one did: the
    import then joins that profile's chart series. The workload is rw, block size, iodepth, jobs and (for a
    mixed rw) read %, each as the output states it; anything it does not state matches nothing, so an import
    joins a series only on what its output says. Partial results (excerpts), each client and "All clients" (an
    aggregate of several hosts) keep series of their own."""
    if parsed.partial or parsed.label.startswith("client") or parsed.label == "All clients":
        return None
    summary = parsed.summary
    stated = summary.get("workload") or {}
    ran_here = RunResult.objects.filter(disk=disk, profile__isnull=False).values("profile_id").distinct()
    candidates = [p for p in Profile.objects.filter(pk__in=ran_here) if p.tool == summary.get("tool")]
    matching = [p for p in candidates if _states(p, stated, summary.get("block_size_bytes"))]
    return matching[0] if len(matching) == 1 else None


def _states(profile: Profile, stated: dict[str, Any], block_size: int | None) -> bool:
    """Whether the output states exactly this profile's workload."""
    if block_size != profile.block_size_bytes or stated.get("numjobs") != profile.jobs:
        return False
    if profile.tool == Profile.Tool.NDISK64:
        rw = str(stated.get("rw") or "")
        random = rw.startswith("rand")
        return bool(rw) and random == (profile.pattern == Profile.Pattern.RANDOM) and _same_mix(profile, stated)
    if stated.get("rw") != profile.rw or stated.get("iodepth") != profile.iodepth:
        return False
    return profile.rw not in (Profile.RW.RW, Profile.RW.RANDRW) or _same_mix(profile, stated)


def _same_mix(profile: Profile, stated: dict[str, Any]) -> bool:
    read_percent = stated.get("read_percent")
    return read_percent is not None and float(read_percent) == float(profile.read_percent)


@dataclass(frozen=True)
class Member:
    """Where an imported run stands in a set of runs (jobs/imports/sweeps.py): its set, place and point."""

    run_set: RunSet
    index: int
    point: dict[str, int]


def store_result(
    disk: Disk,
    text: str,
    parsed: ParseResult,
    *,
    name: str,
    finished: datetime,
    user: Any,
    member: Member | None = None,
) -> Run:
    """One result stored as a finished run of the disk; DuplicateImport when it is already stored there."""
    first = duplicate_of(disk, text, parsed.label)
    if first is not None:
        raise DuplicateImport(first, parsed.label)
    summary = parsed.summary_with_bins()
    runtime = summary.get("runtime_s")
    errors = "; ".join(f"job {e['job']} error {e['errno']}" for e in parsed.job_errors)
    source = f"{name}, {parsed.label}" if parsed.label else name
    explanation = f"the imported output reports an error: {errors}" if errors else f"imported from {source}"
    if parsed.partial:
        explanation += f" (partial: {parsed.partial})"
    # A set's member is charted in its set, not in a profile's series (RunResult.record skips it).
    joined = same_workload_profile(disk, parsed) if member is None else None
    if joined is not None:
        explanation += f"; charted with the runs of {joined.name}, which measured the same workload"
    run = Run.objects.create(
        disk=disk,
        profile=joined,
        profile_name=joined.name if joined else series_name(parsed, name),
        parameters={
            "tool": summary["tool"],
            "format": parsed.format,
            "source": name,
            "label": parsed.label,
            "partial": parsed.partial,
            "settings": parsed.settings,
        },
        trigger=Run.Trigger.IMPORT,
        created_by=user if getattr(user, "is_authenticated", False) else None,
        state=Run.State.FAILED if errors else Run.State.SUCCEEDED,
        explanation=explanation,
        started_at=finished - timedelta(seconds=runtime) if runtime else finished,
        finished_at=finished,
        raw_output=text,
        import_fingerprint=fingerprint(text, parsed.label),
        summary=storing.stored_summary(summary),
        limits_snapshot=disk.limits_snapshot(summary.get("block_size_bytes")),
        steady_state=None if errors else steady.stamp(parsed.steadystate, summary.get("samples", [])),
        run_set=member.run_set if member else None,
        set_index=member.index if member else None,
        set_point=member.point if member else None,
    )
    RunSample.store(run, summary.get("samples", []))
    RunResult.record(run)
    boundary.after_commit(alerts.run_finished, run.pk)
    return run
