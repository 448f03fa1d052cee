"""A latency-target search as a set of runs: the most IOPS whose chosen percentile stays at most a target, one
member run a step (jobs/analysis/sla_search.py decides each step; this module reads the members for it and makes
the next one).

The first member runs the profile unthrottled: its IOPS are the highest rate, and the lowest is the profile's
lowest rate, else a twentieth of the highest. Each later member runs at {"rate_iops": N}, fio's rate cap shared out
among its jobs (Profile.at_point). The search keeps no state of its own: each step is asked anew from the members
stored, so a lost message or a restarted worker changes nothing (the beat tick advances a stalled set).

A member that does not succeed ends the search failed, naming the step: a search cannot step past a rate it has
not measured. The profile edited during a search ends it too: its steps would measure different workloads."""

from __future__ import annotations

from typing import Any

from jobs.analysis import sla_search
from jobs.models import Disk, Profile, Run, RunSet
from jobs.models.profiles import RATE_POINT
from jobs.runs import queueing, states
from jobs.runs.queueing import RunRefused
from jobs.sets import summary
from jobs.units import format_iops_exact, format_micros

# Without a lowest rate in the profile, the search starts from this share of the unthrottled IOPS.
LOWEST_SHARE = 1 / 20


def plan_json(profile: Profile) -> dict[str, Any]:
    """What a search set stores as its plan: its target, its bounds, and the most time it takes."""
    seconds = profile.runtime_s + profile.ramp_time_s
    return {
        "percentile": profile.sla_percentile,
        "target_us": profile.sla_target_us,
        "max_runs": profile.sla_max_runs,
        "lowest_iops": profile.sla_lowest_iops,
        "step_fraction": sla_search.STEP_FRACTION,
        "seconds_per_step": seconds,
        "total_s": seconds * profile.sla_max_runs,
    }


def latency_of(summary: Any, percentile: str) -> float | None:
    """The percentile's completion latency (µs) of the worse direction of a run's summary; None: not reported."""
    key = percentile.replace(".", "_")
    found = []
    for direction in ("read", "write"):
        value = ((summary or {}).get(direction) or {}).get("clat_us", {}) or {}
        if isinstance(value.get(key), int | float):
            found.append(float(value[key]))
    return max(found) if found else None


def measurement(member: Run, percentile: str) -> sla_search.Measurement:
    """A succeeded member as the search reads it: the rate it was capped at (the unthrottled one: what it measured),
    its total IOPS and its percentile."""
    iops = float(((member.summary or {}).get("total") or {}).get("iops") or 0)
    rate = (member.set_point or {}).get(RATE_POINT) or max(1, round(iops))
    return sla_search.Measurement(int(rate), iops, latency_of(member.summary, percentile))


def search_of(plan: dict[str, Any], first: sla_search.Measurement) -> sla_search.Search:
    """The search's settings, its highest rate the unthrottled run's; ValueError (a sentence) when they cannot
    hold, e.g. a lowest rate at or above what the disk delivered."""
    highest = first.rate
    lowest = plan.get("lowest_iops") or max(1, round(highest * LOWEST_SHARE))
    if highest <= lowest:
        raise ValueError(
            f"the unthrottled run measured {format_iops_exact(first.iops)}, not above the lowest rate of "
            f"{format_iops_exact(lowest)}: lower the profile's lowest rate, or leave it empty"
        )
    return sla_search.Search(
        percentile=plan["percentile"],
        target_us=float(plan["target_us"]),
        lowest=lowest,
        highest=highest,
        max_runs=int(plan["max_runs"]),
        step_fraction=float(plan.get("step_fraction") or sla_search.STEP_FRACTION),
    )


def advance(run_set: RunSet, members: list[Run]) -> tuple[str, str, dict[str, Any]] | None:
    """The search's next step once its members have all ended: None when the next member was made (and claimed
    if it can start), else the set's end as (state, explanation, result)."""
    plan = run_set.plan
    measured = [measurement(m, plan["percentile"]) for m in members if m.state == Run.State.SUCCEEDED]
    if run_set.cancel_requested:
        return RunSet.State.CANCELLED, f"cancelled after {_steps(len(members))}", result(plan, members, None)
    failed = next((m for m in members if m.state != Run.State.SUCCEEDED), None)
    if failed is not None:
        return RunSet.State.FAILED, _failed_at(failed), result(plan, members, None)
    if not members:
        return RunSet.State.FAILED, "failed: the search has no first run", result(plan, members, None)
    try:
        search = search_of(plan, measured[0])
        step = sla_search.next_step(search, measured)
    except ValueError as exc:
        return RunSet.State.FAILED, f"failed after step {len(members)}: {exc}", result(plan, members, None)
    if isinstance(step, sla_search.Answer):
        found = result(plan, members, (search, step))
        return RunSet.State.SUCCEEDED, f"finished in {_steps(len(members))}: {found['answer_text']}", found
    try:
        _make_step(run_set, step.rate)
    except RunRefused as exc:
        return RunSet.State.FAILED, f"failed before step {len(members) + 1}: {exc}", result(plan, members, None)
    return None


def result(
    plan: dict[str, Any], members: list[Run], found: tuple[sla_search.Search, sla_search.Answer] | None
) -> dict[str, Any]:
    """The set's result: every step (its rate, IOPS, percentile and verdict) and, once found, the answer."""
    percentile, target = plan["percentile"], plan["target_us"]
    steps, runs = [], {}
    for member in members:
        step: dict[str, Any] = {"index": member.set_index, "run": member.pk, "state": member.state,
                                "rate_iops": (member.set_point or {}).get(RATE_POINT), "iops": None,
                                "latency_us": None, "verdict": None}  # fmt: skip
        if member.state == Run.State.SUCCEEDED:
            run = measurement(member, percentile)
            step |= {"iops": run.iops, "latency_us": run.latency_us, "verdict": _verdict(plan, run)}
            runs[run] = member.pk
        steps.append(step)
    answer, text = None, ""
    if found is not None:
        search, reply = found
        text = sla_search.answer_sentence(search, reply)
        best = reply.best
        answer = {
            "iops": best.iops if best else None,
            "rate_iops": best.rate if best else None,
            "run": runs.get(best) if best else None,
            "latency_us": best.latency_us if best else None,
            "percentile": percentile,
            "target_us": target,
            "within_iops": reply.within,
            "why": reply.why,
        }
    # Beside the steps, each member as a sweep's point (its rate the point's field), as the set's page reads a set.
    points = [summary.point_numbers(member) for member in members]
    return {"percentile": percentile, "target_us": target, "steps": steps, "answer": answer, "answer_text": text,
            "points": points, "axis": None, "curves": []}  # fmt: skip


def answer_series(profile_name: str, result: dict[str, Any]) -> list[tuple[int, str]]:
    """The member that stands for a search on its disk's charts: the answer's run, under a series of its own
    ("p99 under 1 ms · p99 ≤ 1 ms"), so that the SLA IOPS are trended over time beside the limit, and judged by
    compliance, change points and alerts as any series is (as a sweep's knee: summary.knee_series)."""
    answer = result.get("answer") or {}
    if not answer.get("run"):
        return []
    suffix = f" · {answer['percentile']} ≤ {format_micros(answer['target_us'])}"
    return [(int(answer["run"]), profile_name[: summary.SERIES_NAME_MAX - len(suffix)] + suffix)]


def _verdict(plan: dict[str, Any], run: sla_search.Measurement) -> str:
    # The verdict reads the target and the delivery tolerance only; the bounds here are any that hold.
    judge = sla_search.Search(plan["percentile"], float(plan["target_us"]), 1, 2, int(plan["max_runs"]))
    return sla_search.verdict(judge, run)


def _make_step(run_set: RunSet, rate: int) -> None:
    """The next member at `rate`, claimed now (the set holds the disk: nothing else can have taken it)."""
    profile = run_set.profile
    if profile is None:
        raise RunRefused("profile", f"its profile {run_set.profile_name} was deleted during the search")
    if profile.parameters() != run_set.base_parameters:
        raise RunRefused("profile", f"its profile {profile.name} was edited during the search, so its steps would "
                         "measure different workloads; start the search again")  # fmt: skip
    disk = Disk.objects.select_related("host").get(pk=run_set.disk_id)
    member = queueing.create_run(disk, profile, trigger=run_set.trigger, schedule=run_set.schedule,
                                 fire_time=run_set.fire_time, run_set=run_set,
                                 point={RATE_POINT: rate})  # fmt: skip
    states.claim(member)


def _failed_at(member: Run) -> str:
    rate = (member.set_point or {}).get(RATE_POINT)
    at = f" (capped at {format_iops_exact(rate)})" if rate else " (unthrottled)"
    return f"failed at step {(member.set_index or 0) + 1}{at}: it ended {member.state}: {member.explanation}"


def _steps(count: int) -> str:
    return f"{count} step{'s' if count != 1 else ''}"
