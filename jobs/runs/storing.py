"""Storing a run's outcome: its samples and result in the same transaction as its final state. A collection
(jobs/runs/collecting.py) stores what the host left; the driver of a group run by fio's client/server mode
(jobs/runs/driving.py) stores what fio's client received. Both read why the last check before the first byte
refused a run on its host."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from jobs import remote, ssh
from jobs import runners as runner
from jobs.disks import identity, precondition
from jobs.models import Run, RunResult, RunSample
from jobs.runs import judging
from jobs.runs.states import finish
from jobs.safety import guard


def stored_summary(summary: dict[str, Any] | None) -> dict[str, Any] | None:
    # The per-second samples are kept as RunSample rows; a second copy in the summary is dead weight.
    return summary and {key: value for key, value in summary.items() if key != "samples"}


def store_outcome(run: Run, outcome: runner.Outcome, *, exit_status: int | None, **fields: Any) -> bool:
    """The run ends as its outcome says, with its samples and result; False when another step finished it first
    (a sweep raced a slow collector): its result is kept, not this one. A succeeded run is judged as it is stored
    (jobs/runs/judging.py): whether its number is the disk's."""
    if outcome.state == Run.State.SUCCEEDED:
        fields["verdicts"] = judging.verdicts_of(run, outcome.summary)
    with transaction.atomic():
        # The run ends here, once: it has neither samples nor a result row yet (a second store of it finds it
        # final, and everything here is rolled back).
        RunSample.store(run, (outcome.summary or {}).get("samples", []), first=True)
        finished = finish(
            run,
            outcome.state,
            outcome.explanation,
            summary=stored_summary(outcome.summary),
            raw_output=outcome.raw_output,
            raw_stderr=outcome.raw_stderr,
            exit_status=exit_status,
            steady_state=outcome.steady_state,
            **fields,
        )
        if not finished:
            transaction.set_rollback(True)
            return False
        RunResult.record(run, first=True)
        precondition.note_fill(run)
    return True


def refused_on_host(conn: ssh.Connection, run: Run) -> str:
    """Why the wrapper's last check before the first byte refused the run, or "" when it left no refusal (the
    status was the tool's own)."""
    read = {name: remote.read_file(conn, f"{run.remote_dir}/guard.{name}").decode(errors="replace")
            for name in ("refused", "expected", "seen")}  # fmt: skip
    if not read["refused"].strip():
        return ""
    disk = run.disk
    why, verdict = guard.explanation(
        read["refused"], read["expected"], read["seen"],
        kind=disk.kind, allow_destructive=disk.allow_destructive, recorded_identity=disk.identity,
    )  # fmt: skip
    if verdict is not None and not verdict.ok:
        identity.note_verdict(run, verdict)  # another disk at the path: audited as when the verdict finds it
    return f"refused on the host just before the first write, nothing was written: {why}"
