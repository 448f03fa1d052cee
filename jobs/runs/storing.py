"""Storing a run's outcome: its samples and result in the same transaction as its final state. A collection
(jobs/runs/collecting.py) stores what the host left; the driver of a group run by fio's client/server mode
(jobs/runs/driving.py) stores what fio's client received."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from jobs import runners as runner
from jobs.disks import precondition
from jobs.models import Run, RunResult, RunSample
from jobs.runs import judging
from jobs.runs.states import finish


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
        RunSample.store(run, (outcome.summary or {}).get("samples", []))
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
        RunResult.record(run)
        precondition.note_fill(run)
    return True
