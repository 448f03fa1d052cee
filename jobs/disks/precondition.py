"""A disk's preconditioning record, and the warning a run on fresh (never written) blocks carries.

Fresh blocks of a thin-provisioned or cloud volume, and a test file fio lays out just before it reads it, read
faster than blocks that hold data: such a result flatters the disk. Disk.precondition says when and how the
target was last filled, {"at": ISO time with zone, "how": words, "source": "run" | "user", "run": id, "by":
username}; a run with a fill (Profile.precondition) writes it when it succeeds, a person can record one by
hand. A record older than the disk's recorded identity no longer counts: another device may sit at the path.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.utils import timezone

from jobs import clock, runners, units
from jobs.models import Disk, Run
from jobs.tools import fio, fio_fill

FRESH_ADVICE = "fresh blocks of a thin-provisioned or cloud volume read faster than written ones"


class RecordError(ValueError):
    """A hand-made record that cannot be kept; field names what to correct."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def recorded_at(record: dict[str, Any]) -> datetime | None:
    try:
        return datetime.fromisoformat(str(record.get("at")))
    except ValueError:
        return None


def stale_reason(disk: Disk) -> str:
    """Why the disk's record does not count ("" when it does, or there is none): it predates the identity."""
    at = recorded_at(disk.precondition) if disk.precondition else None
    if at is None or disk.identity_recorded_at is None or at >= disk.identity_recorded_at:
        return ""
    return (
        f"the preconditioning recorded on {clock.utc_text(at, clock.MINUTES)} predates the identity recorded on "
        f"{clock.utc_text(disk.identity_recorded_at, clock.MINUTES)}, so it may have been of another device"
    )


def valid_record(disk: Disk) -> dict[str, Any] | None:
    """The disk's preconditioning record if it still counts."""
    if not disk.precondition or recorded_at(disk.precondition) is None or stale_reason(disk):
        return None
    return disk.precondition


def fresh_block_warnings(disk: Disk, params: dict[str, Any]) -> list[str]:
    """The warning for a run about to read blocks that benchweb knows were never written, or [].

    A run with a fill writes its target first, so it never gets one. A block device needs a record that counts.
    A directory run reads test files fio lays out for this run only, so a record cannot help there: only a
    fill does, and only a profile that reads is warned.
    """
    if params.get("precondition") == fio_fill.FILL:
        return []
    if disk.kind == Disk.Kind.BLOCK:
        if valid_record(disk):
            return []
        why = stale_reason(disk) or "no preconditioning is on record"
        return [
            f"Fresh blocks: benchweb knows of no write that filled {disk.target_path} ({why}), and {FRESH_ADVICE}: "
            "precondition the disk (the fio profile option “fill”) or record a preconditioning on the disk page."
        ]
    if not _reads(params):
        return []
    return [
        "Fresh blocks: the test files were laid out by fio just now, and "
        f"{FRESH_ADVICE}: give the profile the option “fill” (precondition), which writes them in full before "
        "the measured job."
    ]


def _reads(params: dict[str, Any]) -> bool:
    if params.get("tool") == "ndisk64":
        return int(params.get("read_percent") or 0) > 0
    return params.get("rw") not in fio.WRITE_ONLY_MODES


def sized_parameters(params: dict[str, Any], kind: str, facts: dict[str, Any]) -> dict[str, Any]:
    """params with the size of one pass of a block device's fill (the probe's id_size_sectors), so that the
    ETA and the host's watchdog allow for writing the whole device (runners.fill_seconds). ToolUnavailable when
    the host did not say how large the device is: a fill that no watchdog bound can be set for does not start."""
    if params.get("precondition") != fio_fill.FILL or kind != Disk.Kind.BLOCK:
        return params
    size = (facts.get("identity") or {}).get("size_bytes") or facts.get("size_bytes")
    if not size:
        raise runners.ToolUnavailable(
            "the fill cannot be timed: the host did not say the size of the device (blockdev, "
            "/sys/class/block/<name>/size), so no watchdog can be set for it; check the device, or run a profile "
            "without the fill"
        )
    return params | {"precondition_pass_bytes": int(size)}


def fill_text(summary: dict[str, Any]) -> str:
    """What the run page says of a fill that ran before the measured job, in fio's figures ("" for none)."""
    fill = summary.get("precondition")
    if not fill:
        return ""
    passes = f" ×{fill['passes']}" if fill.get("passes") else ""
    figures = _fill_figures(fill)
    done = f"{passes} ({figures})" if figures else passes
    return f"Preconditioned first: a sequential fill{done}. The figures above are the measured job's alone."


def _fill_figures(fill: dict[str, Any]) -> str:
    written = f"{units.format_bytes(fill['bytes'])} written" if fill.get("bytes") is not None else ""
    took = f"in {fill['seconds']:g} s" if fill.get("seconds") is not None else ""
    return " ".join(part for part in (written, took) if part)


def note_fill(run: Run) -> None:
    """After a run with a fill succeeded: record on its disk what the fill did, in fio's own figures."""
    params = run.parameters
    fill = (run.summary or {}).get("precondition")
    if run.state != Run.State.SUCCEEDED or params.get("precondition") != fio_fill.FILL or not fill:
        return
    what = "the whole device" if run.disk.kind == Disk.Kind.BLOCK else "the run's test files"
    passes = fill.get("passes") or params.get("precondition_passes")
    figures = _fill_figures(fill)
    how = f"sequential write of {what} ×{passes}" + (f" ({figures})" if figures else "") + f", by run {run.pk}"
    at = run.finished_at or timezone.now()
    record = {"at": at.isoformat(), "how": how, "source": "run", "run": run.pk}
    Disk.objects.filter(pk=run.disk_id).update(precondition=record)
    run.disk.precondition = record


def record_by_hand(disk: Disk, *, at: datetime | None, how: str, user: Any) -> dict[str, Any]:
    """A person's record of a preconditioning done outside benchweb (dd, a previous fill); RecordError naming
    the field when it cannot count."""
    if disk.kind != Disk.Kind.BLOCK:
        raise RecordError(
            "how",
            "a directory disk's test files are laid out anew by every run, so a record would not count: give the "
            "profile the option “fill” instead.",
        )
    how = " ".join((how or "").split())
    if not how:
        raise RecordError("how", "Say how the disk was filled, e.g. “dd if=/dev/zero of=/dev/sdb bs=1M, twice”.")
    if len(how) > 300:
        raise RecordError("how", f"Keep it under 300 characters ({len(how)} given).")
    now = timezone.now()
    at = at or now
    if timezone.is_naive(at):
        raise RecordError("at", "Give the time with its zone, e.g. 2026-05-01T08:00Z.")
    if at > now:
        raise RecordError("at", f"{clock.utc_text(at, clock.MINUTES)} is in the future: give when the fill ended.")
    if disk.identity_recorded_at and at < disk.identity_recorded_at:
        raise RecordError(
            "at",
            f"It would not count: the disk's identity was recorded on "
            f"{clock.utc_text(disk.identity_recorded_at, clock.MINUTES)}, later, and another device may have been "
            "at the path before. Give when it was filled since.",
        )
    record = {"at": at.isoformat(), "how": how, "source": "user", "run": None, "by": getattr(user, "username", "")}
    Disk.objects.filter(pk=disk.pk).update(precondition=record)
    disk.precondition = record
    return record


def clear(disk: Disk) -> None:
    Disk.objects.filter(pk=disk.pk).update(precondition={})
    disk.precondition = {}
