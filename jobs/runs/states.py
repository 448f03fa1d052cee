"""The state machine every step of a run calls: `move` from allowed states to the next one, `finish` in a final
state and hand the disk on. docs/architecture.md has the states and who moves a run between them."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from jobs.alerts import evaluate as alerts
from jobs.models import Run
from jobs.runs import queueing

# A finishing run claims at most this many of the runs waiting for its disk or host (the tick does the rest).
CLAIMS_ON_FINISH = 20


def move(run: Run, from_states: tuple[str, ...], to_state: str, *, attempt: int | None = None, **fields: Any) -> bool:
    """Move `run` from one of `from_states`; with `attempt`, only while that launch attempt is its latest."""
    now = timezone.now()
    runs = Run.objects.filter(pk=run.pk, state__in=from_states)
    if attempt is not None:
        runs = runs.filter(launch_attempt=attempt)
    changed = runs.update(state=to_state, heartbeat_at=now, **fields)
    if changed:
        run.refresh_from_db()
    return bool(changed)


def finish(
    run: Run,
    state: str,
    explanation: str,
    *,
    attempt: int | None = None,
    from_states: tuple[str, ...] = (Run.State.PENDING, *Run.ACTIVE_STATES),
    **fields: Any,
) -> bool:
    """Move a run to a final state (from one of `from_states`: any unfinished one by default), and hand the disk
    (or exclusive host) it held to the runs waiting for it in the same transaction: a free disk does not wait
    for the beat tick, and no waiting run keeps naming a run that has ended. A run that ended otherwise than
    succeeded has no number to judge: it keeps no validity stamp (the warnings given at its launch, such as
    fresh blocks, and no steady-state stamp)."""
    if state != Run.State.SUCCEEDED:
        fields |= {"warnings": [], "steady_state": None}
    with transaction.atomic():
        finished = move(
            run, from_states, state, attempt=attempt, explanation=explanation, finished_at=timezone.now(), **fields
        )
        if finished:
            _claim_waiting(run)
            # After the commit: a succeeded run's result and change points are stored by then.
            alerts.after_commit(alerts.run_finished, run.pk)
    return finished


def _claim_waiting(run: Run) -> None:
    """claim() the due runs waiting for `run`'s disk (its whole host when exclusive), oldest first: the first
    takes it, and each of the others gets its reason anew from claim(). The beat tick does the same for any
    beyond the first CLAIMS_ON_FINISH."""
    host = run.disk.host
    waiting = Run.objects.filter(state=Run.State.PENDING).exclude(not_before__gt=timezone.now() + queueing.CLAIM_LEAD)
    waiting = waiting.filter(disk__host_id=host.pk) if host.exclusive else waiting.filter(disk_id=run.disk_id)
    for next_run in waiting.select_related("disk__host").order_by("not_before", "pk")[:CLAIMS_ON_FINISH]:
        queueing.claim(next_run)
