"""A set's next step, after each member ends (task jobs.advance_set) and from the beat tick for any set left
unadvanced: while members are unfinished, nothing; when all have ended, the set ends, with its own result beside
its members' (a sweep: every point's numbers, its curves and their knees; jobs/sets/summary.py), or, for a
latency-target search, its next member is made unless the search has its answer (jobs/sets/searching.py); a
synchronised group: its start spread, windows, totals and latency (jobs/sets/group_result.py); a group-size sweep: its
total and per-member IOPS at each size and where adding members stops adding IOPS (jobs/sets/group_sizes_result.py).

A sweep's state is the members' account: cancelled when a cancel was asked, succeeded when every member
succeeded, failed otherwise (the members that succeeded keep their results, and the set's result is drawn from
them). A group that ended with some member not succeeded is *failed*, its explanation "partial: ..." naming
each such member, its host and why."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from jobs.alerts import boundary, evaluate
from jobs.models import Run, RunResult, RunSet
from jobs.runs import states
from jobs.sets import group_result, group_sizes_result, searching, summary


def advance(run_set_id: int) -> str:
    """Move the set on once its members have all ended; its state afterwards."""
    with transaction.atomic():
        run_set = RunSet.objects.select_for_update().filter(pk=run_set_id).first()
        if run_set is None:
            return "gone"
        if run_set.is_final:
            return run_set.state
        members = list(run_set.members.select_related("disk__host").order_by("set_index"))
        if any(not member.is_final for member in members):
            _claim_next_size(run_set, members)
            return run_set.state
        if run_set.kind == RunSet.Kind.SLA:
            ending = searching.advance(run_set, members)
            if ending is None:
                return run_set.state  # its next step was made: the set goes on holding the disk
            state, explanation, result = ending
            series = searching.answer_series(run_set.profile_name, result)
        elif run_set.kind == RunSet.Kind.GROUP:
            state, explanation = group_ending(run_set, members)
            result = group_result.group_result(members, run_set.plan)
            series = []
        elif run_set.kind == RunSet.Kind.GROUP_SIZES:
            state, explanation = group_sizes_result.sizes_ending(run_set, members)
            result = group_sizes_result.sizes_result(run_set, members)
            series = []
        else:
            state, explanation = _ending(run_set, members)
            result = summary.sweep_result(run_set, members)
            tool = str(run_set.base_parameters.get("tool", "fio"))
            result["moved"] = summary.knee_moved(_last_result(run_set), result, tool)
            explanation = "; ".join([explanation, *result["moved"]])
            series = summary.knee_series(run_set.profile_name, result)
        RunSet.objects.filter(pk=run_set.pk).update(
            state=state, explanation=explanation, finished_at=timezone.now(), result=result
        )
        by_pk = {member.pk: member for member in members}
        for run_id, name in series:
            RunResult.record(by_pk[run_id], series=name)
        if series:
            boundary.after_commit(evaluate.series_recorded, run_set.disk_id, [name for _, name in series])
        if run_set.kind == RunSet.Kind.GROUP:
            boundary.after_commit(evaluate.group_ended, run_set.pk)
        # The disk is free now: the runs that waited for the set take it, as after any run (a group's other
        # disks were handed on as their members ended).
        states.hand_on(run_set.disk)
    return state


def _claim_next_size(run_set: RunSet, members: list[Run]) -> None:
    """A group-size sweep's next size once its smaller ones have all ended. Each member's finish claims the runs
    waiting for its disk (states.hand_on), but two members of a size ending at once each commit before seeing the
    other ended (PostgreSQL's read committed), and neither claims the next size. This runs after each member's
    commit under the set's row lock, so the last to get here sees them all ended (claim_group_size claims a size
    once, whoever asks)."""
    if run_set.kind != RunSet.Kind.GROUP_SIZES:
        return
    pending = [member for member in members if member.state == Run.State.PENDING]
    if pending and all(member.is_final for member in members if (member.set_index or 0) < (pending[0].set_index or 0)):
        states.claim(pending[0])


def advance_stalled() -> int:
    """Advance every unfinished set whose members have all ended (its advance message was lost); how many."""
    unfinished = RunSet.objects.filter(state__in=RunSet.UNFINISHED_STATES)
    open_members = Run.objects.exclude(state__in=Run.FINAL_STATES).values("run_set_id")
    stalled = unfinished.exclude(pk__in=open_members).values_list("pk", flat=True)
    return sum(advance(pk) in RunSet.FINAL_STATES for pk in list(stalled))


def _last_result(run_set: RunSet) -> dict | None:
    """The result of the last sweep of the same profile on the same disk that ended with one."""
    earlier = RunSet.objects.filter(disk_id=run_set.disk_id, profile_name=run_set.profile_name, kind=run_set.kind,
                                    finished_at__isnull=False, result__isnull=False).exclude(pk=run_set.pk)  # fmt: skip
    found = earlier.order_by("-finished_at").values_list("result", flat=True).first()
    return found if isinstance(found, dict) else None


# A failed group's explanation names at most this many of the members that did not succeed.
NAMED_FAILURES = 5


def group_ending(run_set: RunSet, members: list[Run]) -> tuple[str, str]:
    """A group's state and explanation once its members have ended: "partial: 2 of 3 members succeeded; member 3
    on host X failed: why" when some did not succeed."""
    state, counted = _counted(run_set, members, "members")
    if state != RunSet.State.FAILED:
        return state, counted
    others = [member for member in members if member.state != Run.State.SUCCEEDED]
    named = [
        f"{group_result.member_name(m)} on host {m.disk.host.name} {m.state}: {m.explanation}"
        for m in others[:NAMED_FAILURES]
    ]
    more = f"; and {len(others) - NAMED_FAILURES} more" if len(others) > NAMED_FAILURES else ""
    return state, f"partial: {counted}; {'; '.join(named)}{more}"


def _ending(run_set: RunSet, members: list[Run]) -> tuple[str, str]:
    state, counted = _counted(run_set, members, "points")
    if state != RunSet.State.FAILED:
        return state, counted
    failed = next((m for m in members if m.state != Run.State.SUCCEEDED), None)
    first = f"; point {(failed.set_index or 0) + 1} {failed.state}: {failed.explanation}" if failed else ""
    return state, f"finished: {counted}{first}"


def _counted(run_set: RunSet, members: list[Run], noun: str) -> tuple[str, str]:
    """A set's state by its members' account, and its explanation when cancelled or succeeded; when failed, the
    count alone ("2 of 3 points succeeded"), for the kind of set to say which did not."""
    succeeded = sum(member.state == Run.State.SUCCEEDED for member in members)
    count = f"{succeeded} of {len(members)} {noun} succeeded"
    if run_set.cancel_requested:
        return RunSet.State.CANCELLED, f"cancelled: {count}"
    if members and succeeded == len(members):
        return RunSet.State.SUCCEEDED, f"finished: {count}"
    return RunSet.State.FAILED, count
