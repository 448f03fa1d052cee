"""A set's next step, after each member ends (task jobs.advance_set) and from the beat tick for any set left
unadvanced: while members are unfinished, nothing; when all have ended, the set ends, with its own result beside
its members' (a sweep: every point's numbers, its curves and their knees; jobs/sets/summary.py).

The set's state is the members' account: cancelled when a cancel was asked, succeeded when every member
succeeded, failed otherwise (the members that succeeded keep their results, and the set's result is drawn from
them)."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from jobs.models import Run, RunSet
from jobs.runs import states
from jobs.sets import summary


def advance(run_set_id: int) -> str:
    """Move the set on once its members have all ended; its state afterwards."""
    with transaction.atomic():
        run_set = RunSet.objects.select_for_update().filter(pk=run_set_id).first()
        if run_set is None:
            return "gone"
        if run_set.is_final:
            return run_set.state
        members = list(run_set.members.order_by("set_index"))
        if any(not member.is_final for member in members):
            return run_set.state
        state, explanation = _ending(run_set, members)
        RunSet.objects.filter(pk=run_set.pk).update(
            state=state,
            explanation=explanation,
            finished_at=timezone.now(),
            result=summary.sweep_result(run_set, members),
        )
        # The disk is free now: the runs that waited for the set take it, as after any run.
        states.hand_on(run_set.disk)
    return state


def advance_stalled() -> int:
    """Advance every unfinished set whose members have all ended (its advance message was lost); how many."""
    unfinished = RunSet.objects.filter(state__in=RunSet.UNFINISHED_STATES)
    open_members = Run.objects.exclude(state__in=Run.FINAL_STATES).values("run_set_id")
    stalled = unfinished.exclude(pk__in=open_members).values_list("pk", flat=True)
    return sum(advance(pk) in RunSet.FINAL_STATES for pk in list(stalled))


def _ending(run_set: RunSet, members: list[Run]) -> tuple[str, str]:
    succeeded = sum(member.state == Run.State.SUCCEEDED for member in members)
    points = f"{succeeded} of {len(members)} points succeeded"
    if run_set.cancel_requested:
        return RunSet.State.CANCELLED, f"cancelled: {points}"
    if members and succeeded == len(members):
        return RunSet.State.SUCCEEDED, f"finished: {points}"
    failed = next((m for m in members if m.state != Run.State.SUCCEEDED), None)
    first = f"; point {(failed.set_index or 0) + 1} {failed.state}: {failed.explanation}" if failed else ""
    return RunSet.State.FAILED, f"finished: {points}{first}"
