"""A synchronised group's latency and members (pure): percentiles merged exactly from the members' json+ bins, or,
where a member has none, each member's own beside the worst and the median, marked "not merged"; the members
against one another (the slowest, the worst p99, the spread of their IOPS); and where a group-size sweep stops
adding IOPS. Nothing here guesses: a number the members' data cannot give is None, and the result says why."""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from jobs.tools.summary import PERCENTILES, percentiles_from_bins
from jobs.units import format_iops

# The percentiles a group reports: the summary's (p50 to p99.9) and p99.99, which pooled bins give exactly.
GROUP_PERCENTILES = (*PERCENTILES, ("p99_99", 99.99))
# The group-size sweep's threshold: a larger group must give this much more total IOPS per doubling.
GAIN_PER_DOUBLING = 0.10


# ----------------------------------------------------------------------------- 4. latency


@dataclass(frozen=True)
class MemberLatency:
    """One member's completion latency in one direction: its json+ bins ({ns: count}; None when it has none) and
    the percentiles its summary has (clat_us: p50 ... p99_9, in µs)."""

    bins_ns: Mapping[int, int] | None
    percentiles_us: Mapping[str, float | None]


def member_latency(summary: Mapping[str, Any], direction: str) -> MemberLatency | None:
    """A stored run summary's latency in one direction (bins from its latency_bins_ns, keyed by text); None when
    the run did no I/O that way."""
    stats = summary.get(direction)
    if not isinstance(stats, Mapping):
        return None
    stored = (summary.get("latency_bins_ns") or {}).get(direction)
    bins = {int(ns): int(count) for ns, count in stored.items()} if stored else None
    return MemberLatency(bins, dict(stats.get("clat_us") or {}))


@dataclass(frozen=True)
class GroupLatency:
    """The group's completion-latency percentiles in one direction, in µs, keyed p50 ... p99_99.

    merged: every member had json+ bins, and pooled_us holds the percentiles of their pooled bins: exact, the
    same as one job's with all the members' I/Os. Otherwise pooled_us is None and label says "not merged" and
    which members have no bins: percentiles of several runs cannot be combined from their percentiles. Either way
    members_us holds each member's own (from its bins when it has them, else its summary's), and worst_us and
    median_us the worst and the median member's for each percentile (None when some member lacks it)."""

    direction: str
    merged: bool
    label: str
    pooled_us: Mapping[str, float | None] | None
    worst_us: Mapping[str, float | None]
    median_us: Mapping[str, float | None]
    members_us: Mapping[str, Mapping[str, float | None]]


def group_latency(direction: str, members: Mapping[str, MemberLatency]) -> GroupLatency | None:
    """The group's latency in one direction from its members' (only those that did I/O that way: member_latency
    gives None for the others); None when there is none.

    The bins are pooled by adding the counts of each latency value (fio's buckets are the same on every host of a
    release), and the percentiles are read from the pooled bins by fio's own rule, jobs.tools.summary's
    percentiles_from_bins, as for one job: the first bin at which the running count reaches p % of all I/Os."""
    if not members:
        return None
    own = {name: _own_percentiles(latency) for name, latency in members.items()}
    without = [name for name, latency in members.items() if not latency.bins_ns]
    pooled = None if without else _from_bins(_pool([latency.bins_ns or {} for latency in members.values()]))
    if without:
        label = f"not merged: {', '.join(without)} {'has' if len(without) == 1 else 'have'} no json+ latency bins"
    else:
        label = f"merged from {len(members)} members' json+ latency bins"
    return GroupLatency(
        direction=direction,
        merged=pooled is not None,
        label=label,
        pooled_us=pooled,
        worst_us=_across(own, max),
        median_us=_across(own, statistics.median),
        members_us=own,
    )


def _pool(all_bins: Sequence[Mapping[int, int]]) -> Counter[int]:
    pooled: Counter[int] = Counter()
    for bins in all_bins:
        pooled.update(bins)
    return pooled


def _from_bins(bins: Mapping[int, int]) -> dict[str, float | None]:
    found = percentiles_from_bins(dict(bins), [percent for _, percent in GROUP_PERCENTILES])
    return {key: found[percent] / 1000 if percent in found else None for key, percent in GROUP_PERCENTILES}


def _own_percentiles(latency: MemberLatency) -> dict[str, float | None]:
    if latency.bins_ns:
        return _from_bins(latency.bins_ns)
    return {key: _number(latency.percentiles_us.get(key)) for key, _ in GROUP_PERCENTILES}


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _across(
    own: Mapping[str, Mapping[str, float | None]], pick: Callable[[list[float]], float]
) -> dict[str, float | None]:
    found: dict[str, float | None] = {}
    for key, _ in GROUP_PERCENTILES:
        known = [value for percentiles in own.values() if (value := percentiles.get(key)) is not None]
        found[key] = pick(known) if len(known) == len(own) else None
    return found


# ----------------------------------------------------------------------------- 5. members against one another


@dataclass(frozen=True)
class Comparison:
    """Members side by side: slowest, the member with the lowest IOPS; worst_p99, the one with the highest p99;
    spread_percent, (max - min) / max of the members' IOPS in percent. Members without IOPS (or without a p99) are
    left out of that comparison and listed in without_iops (without_p99); the spread is then None, as it is when no
    member did any I/O."""

    slowest: str | None
    worst_p99: str | None
    spread_percent: float | None
    without_iops: tuple[str, ...]
    without_p99: tuple[str, ...]


def compare_members(iops: Mapping[str, float | None], p99_us: Mapping[str, float | None]) -> Comparison:
    """Who was slowest, whose p99 was worst, and how far apart the members' IOPS were. Ties go to the member named
    first. Give every member's IOPS over one window (the all-running one, where there is one)."""
    measured = {name: value for name, value in iops.items() if value is not None}
    latencies = {name: value for name, value in p99_us.items() if value is not None}
    top = max(measured.values(), default=0.0)
    complete = len(measured) == len(iops) and top > 0
    return Comparison(
        slowest=min(measured, key=measured.__getitem__) if measured else None,
        worst_p99=max(latencies, key=latencies.__getitem__) if latencies else None,
        spread_percent=(top - min(measured.values())) / top * 100 if complete else None,
        without_iops=tuple(name for name in iops if name not in measured),
        without_p99=tuple(name for name in p99_us if name not in latencies),
    )


# ----------------------------------------------------------------------------- 6. a group-size sweep


@dataclass(frozen=True)
class SizePoint:
    """One group size of a group-size sweep: members, the group's total IOPS, and each member's IOPS."""

    members: int
    total_iops: float
    member_iops: Sequence[float]


@dataclass(frozen=True)
class Saturation:
    """Where adding members stops adding IOPS: point, or None, and why either way; gain is the threshold applied,
    as a fraction per doubling of the members."""

    point: SizePoint | None
    why: str
    gain: float


def saturation(points: Sequence[SizePoint], gain: float = GAIN_PER_DOUBLING) -> Saturation:
    """The first group size P, in order of size, from which no larger group gave `gain` more total IOPS per
    doubling of its members (default 10 %).

    Per doubling, not per step: a larger group Q's gain over P is (IOPS(Q) / IOPS(P)) ** (1 / log2(n(Q) / n(P))) - 1,
    so a sweep of 1, 2, 4, 8 members and one of 1, 2, 3, 4 are judged alike (a step from 8 to 9 members that scales
    perfectly gains 12.5 %, one from 3 to 4 gains 33 %; both are +100 % per doubling). P is compared with every
    larger group, not only the next, so one size measured low by chance cannot end the curve there. The largest
    size is never the answer (nothing came after it). ValueError names a point that cannot be one."""
    if not gain > 0:
        raise ValueError(f"gain: a threshold is a fraction above 0, not {gain!r}")
    _check_sizes(points)
    if len(points) < 2:
        return Saturation(None, f"a curve needs at least two group sizes; the sweep has {len(points)}", gain)
    for index, point in enumerate(points[:-1]):
        best = max(points[index + 1 :], key=lambda later: _gain_per_doubling(point, later))
        if _gain_per_doubling(point, best) < gain:
            return Saturation(point, _saturated_why(point, best, gain), gain)
    grew = f"total IOPS still grew by {gain * 100:g} % or more per doubling up to {_members(points[-1].members)}"
    return Saturation(None, grew, gain)


def _gain_per_doubling(before: SizePoint, after: SizePoint) -> float:
    if before.total_iops == 0:
        return math.inf if after.total_iops > 0 else 0.0
    return float((after.total_iops / before.total_iops) ** (1 / math.log2(after.members / before.members)) - 1)


def _saturated_why(point: SizePoint, best: SizePoint, gain: float) -> str:
    per_member = statistics.fmean(point.member_iops)
    return (
        f"from {_members(point.members)} ({format_iops(point.total_iops)}, {format_iops(per_member)} a member on "
        f"average) on, no "
        f"larger group gave {gain * 100:g} % more IOPS per doubling; the most was {_members(best.members)}: "
        f"{format_iops(best.total_iops)}, {_signed_percent(_gain_per_doubling(point, best))} per doubling"
    )


def _members(count: int) -> str:
    return f"{count} member" if count == 1 else f"{count} members"


def _signed_percent(fraction: float) -> str:
    return f"{fraction * 100:+.1f} %"


def _check_sizes(points: Sequence[SizePoint]) -> None:
    for before, after in pairwise(points):
        if not after.members > before.members:
            raise ValueError(
                f"members: the group sizes must grow from point to point; {after.members} follows {before.members}"
            )
    for point in points:
        if point.members < 1:
            raise ValueError(f"members: a group has at least one member, not {point.members!r}")
        if not (math.isfinite(point.total_iops) and point.total_iops >= 0):
            raise ValueError(f"total_iops: a measured IOPS is 0 or more, not {point.total_iops!r}")
        if len(point.member_iops) != point.members:
            raise ValueError(
                f"member_iops: {point.members} members need {point.members} IOPS figures, not {len(point.member_iops)}"
            )
