"""A set cancelled: one cancel for all its members. Those not started end at once (the last first, so that no
member's end hands the disk to the next one), the running one is stopped on its host as any run is
(jobs/runs/stopping.py), and the set ends once its last member has (jobs/sets/advancing.py); the members that
finished keep their results."""

from __future__ import annotations

from jobs.models import Run, RunSet
from jobs.runs import stopping
from jobs.sets import advancing


def cancel(run_set: RunSet) -> RunSet:
    if run_set.is_final:
        return run_set
    RunSet.objects.filter(pk=run_set.pk).update(cancel_requested=True, explanation="cancelling")
    for member in (
        run_set.members.exclude(state__in=Run.FINAL_STATES).select_related("disk__host").order_by("-set_index")
    ):
        stopping.cancel(member)
    advancing.advance(run_set.pk)
    run_set.refresh_from_db()
    return run_set
