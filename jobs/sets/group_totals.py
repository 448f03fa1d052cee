"""A synchronised group's numbers, drawn from its members' (pure: no Django, no database).

A group runs one profile on several disks at one instant. Each member reports on its own host's clock, starts and
ends a little apart from the others, and brings its own per-second samples and latency bins. This module turns
them into the group's numbers, and each number says which window, or which members, it covers:

1. clocks: each host's offset from the common clock (benchweb's worker's), as NTP estimates it, and the spread of
   the members' starts on the common clock ("started within 0.08 s ± 0.01 s");
2. windows: when every member was running at once, and the whole span from the first start to the last end;
3. totals: the per-second total series, and the group's IOPS and bytes/s over the all-running window, over each
   member's whole run, and over the whole span;
4. latency: percentiles merged exactly from the members' json+ bins, or, where a member has none, each member's
   own beside the worst and the median, marked "not merged";
5. members against one another: the slowest, the worst p99, the spread of their IOPS;
6. a group-size sweep: the size from which adding members stops adding IOPS.

Nothing here guesses: a number the members' data cannot give is None, and the result says why.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any, NamedTuple

from jobs.tools.summary import PERCENTILES, percentiles_from_bins
from jobs.units import format_iops

# A sample: (t, iops, bytes_per_s), t the instant on the member's own clock that ends the second it measured.
Sample = tuple[float, float, float | None]
# The percentiles a group reports: the summary's (p50 to p99.9) and p99.99, which pooled bins give exactly.
GROUP_PERCENTILES = (*PERCENTILES, ("p99_99", 99.99))
# How much float rounding may move an instant across a window's edge.
EDGE_S = 1e-6
# The group-size sweep's threshold: a larger group must give this much more total IOPS per doubling.
GAIN_PER_DOUBLING = 0.10


# ----------------------------------------------------------------------------- 1. clocks


class Probe(NamedTuple):
    """One exchange with a host, in seconds: t0 sent and t3 answer received (the common clock), t1 received and
    t2 answered (the host's clock)."""

    t0: float
    t1: float
    t2: float
    t3: float


@dataclass(frozen=True)
class ClockOffset:
    """A host's clock minus the common clock, true within ± uncertainty_s; delay_s is the round trip it was read
    from."""

    offset_s: float
    uncertainty_s: float
    delay_s: float

    def to_common(self, instant: float) -> float:
        """An instant of the host's clock on the common clock."""
        return instant - self.offset_s


def clock_offset(probes: Sequence[tuple[float, float, float, float]]) -> ClockOffset:
    """A host's clock offset as NTP estimates it, from the probe with the smallest round trip:

    delay = (t3 - t0) - (t2 - t1), offset = ((t1 - t0) + (t2 - t3)) / 2, uncertainty = delay / 2.

    The estimate is off by half the difference between the way there and the way back, which add up to the delay,
    so whatever the asymmetry the true offset lies within offset ± delay / 2 (times taken exactly). ValueError names
    a probe no pair of clocks could give: an answer before its question on either side, or a host that held the
    probe longer than the whole round trip took."""
    if not probes:
        raise ValueError("probes: no probe of the host's clock was made; at least one is needed")
    checked = [_checked_probe(index, Probe(*probe)) for index, probe in enumerate(probes, 1)]
    best = min(checked, key=_delay)
    delay = _delay(best)
    offset = ((best.t1 - best.t0) + (best.t2 - best.t3)) / 2
    return ClockOffset(offset_s=offset, uncertainty_s=delay / 2, delay_s=delay)


def _delay(probe: Probe) -> float:
    return (probe.t3 - probe.t0) - (probe.t2 - probe.t1)


def _checked_probe(index: int, probe: Probe) -> Probe:
    if not all(math.isfinite(t) for t in probe):
        raise ValueError(f"probe {index}: every time must be a finite number of seconds, not {tuple(probe)!r}")
    if probe.t3 < probe.t0:
        raise ValueError(
            f"probe {index}: its answer came back (t3 = {probe.t3!r}) before it was sent (t0 = {probe.t0!r})"
        )
    if probe.t2 < probe.t1:
        raise ValueError(
            f"probe {index}: the host answered (t2 = {probe.t2!r}) before it received it (t1 = {probe.t1!r})"
        )
    if _delay(probe) < 0:
        raise ValueError(
            f"probe {index}: the host held it {probe.t2 - probe.t1:g} s, longer than the round trip "
            f"({probe.t3 - probe.t0:g} s)"
        )
    return probe


@dataclass(frozen=True)
class StartSpread:
    """How far apart the members started on the common clock: spread_s, true within ± uncertainty_s; first and
    last name the members that started first and last."""

    spread_s: float
    uncertainty_s: float
    first: str
    last: str

    def text(self) -> str:
        """The phrase "started within 0.08 s ± 0.01 s", to the uncertainty's first digit (2 to 6 decimal places)."""
        return f"started within {_plus_minus(self.spread_s, self.uncertainty_s)}"


def start_spread(starts: Mapping[str, float], offsets: Mapping[str, ClockOffset]) -> StartSpread:
    """The spread of the members' starts: each start (on its host's clock) is brought onto the common clock by its
    host's offset, and the spread is the latest corrected start minus the earliest.

    Its uncertainty is the most the true spread can differ from that, each corrected start being true within its
    host's uncertainty: the true spread lies between max(start - u) - min(start + u) (and 0) and the widest
    max(start + u) - min(start - u) over two different members. That is never more than the sum of the two largest
    uncertainties, and it is the sum of the first and last members' when theirs are the widest. ValueError names a
    member without an offset."""
    if not starts:
        raise ValueError("starts: the group has no member start")
    missing = sorted(set(starts) - set(offsets))
    if missing:
        raise ValueError(f"offsets: no clock offset for {', '.join(missing)}")
    corrected = {name: offsets[name].to_common(start) for name, start in starts.items()}
    first, last = min(corrected, key=corrected.__getitem__), max(corrected, key=corrected.__getitem__)
    spread = corrected[last] - corrected[first]
    if len(corrected) == 1:
        return StartSpread(0.0, 0.0, first, last)
    high = [corrected[name] + offsets[name].uncertainty_s for name in corrected]
    low = [corrected[name] - offsets[name].uncertainty_s for name in corrected]
    least = max(0.0, max(low) - min(high))
    return StartSpread(spread, max(_widest_apart(high, low) - spread, spread - least), first, last)


def _widest_apart(high: list[float], low: list[float]) -> float:
    """The largest high[i] - low[j] over two different members: the best pair is among the two highest and the two
    lowest."""
    top = sorted(range(len(high)), key=high.__getitem__, reverse=True)[:2]
    bottom = sorted(range(len(low)), key=low.__getitem__)[:2]
    return max(high[i] - low[j] for i in top for j in bottom if i != j)


def _plus_minus(value: float, uncertainty: float) -> str:
    # The uncertainty is shown to one significant digit (0.0099999 is 0.01, not 0.010), the value to the same place.
    scale = float(f"{uncertainty if uncertainty > 0 else value:.1g}")
    places = 2 if scale <= 0 else min(max(2, -math.floor(math.log10(scale))), 6)
    return f"{value:.{places}f} s ± {uncertainty:.{places}f} s"


# ----------------------------------------------------------------------------- 2. windows


@dataclass(frozen=True)
class Window:
    """From start to end, in seconds of the common clock."""

    start: float
    end: float

    @property
    def seconds(self) -> float:
        return self.end - self.start

    def holds(self, begin: float, end: float) -> bool:
        """Whether the interval from begin to end lies within the window (give or take EDGE_S)."""
        return begin >= self.start - EDGE_S and end <= self.end + EDGE_S


@dataclass(frozen=True)
class Windows:
    """The group's windows on the common clock.

    all_running: from the last start to the first end, while every member ran; None when some member ended before
    another started. elbencho calls the figures of this window (from a common start) "first done": the members
    measured at the moment the first of them is done. span: from the first start to the last end, the time
    elbencho's "last done" figures are divided by. The names say who started last and who ended first and last."""

    all_running: Window | None
    span: Window
    last_started: str
    first_done: str
    last_done: str


def windows(spans: Mapping[str, Window]) -> Windows:
    """The group's windows from each member's run (start to end on the common clock); ValueError names a run that
    ends before it starts."""
    if not spans:
        raise ValueError("spans: the group has no member run")
    for name, span in spans.items():
        if not (math.isfinite(span.start) and math.isfinite(span.end) and span.end >= span.start):
            raise ValueError(f"{name}: a run goes from its start to a later end, not {span.start!r} to {span.end!r}")
    last_started = max(spans, key=lambda name: spans[name].start)
    first_done = min(spans, key=lambda name: spans[name].end)
    last_done = max(spans, key=lambda name: spans[name].end)
    together = Window(spans[last_started].start, spans[first_done].end)
    return Windows(
        all_running=together if together.seconds > EDGE_S else None,
        span=Window(min(span.start for span in spans.values()), spans[last_done].end),
        last_started=last_started,
        first_done=first_done,
        last_done=last_done,
    )


# ----------------------------------------------------------------------------- 3. totals


@dataclass(frozen=True)
class Member:
    """One member's run as its host reported it, on the host's own clock, with the host's clock offset.

    samples are (t, iops, bytes_per_s), one a second, t ending the second measured, bytes_per_s None when the
    tool gave none; iops and bytes_per_s are the whole run's, as the member's summary has them (None: not
    reported)."""

    name: str
    start: float
    end: float
    offset: ClockOffset
    samples: Sequence[Sample] = ()
    iops: float | None = None
    bytes_per_s: float | None = None

    @property
    def span(self) -> Window:
        """The run on the common clock."""
        return Window(self.offset.to_common(self.start), self.offset.to_common(self.end))


@dataclass(frozen=True)
class Second:
    """One second of the group's per-second series: t, the whole second of the common clock nearest the end of
    the samples in it; iops and bytes_per_s summed over the members with a sample there (bytes_per_s None when one
    of those samples has none); every, whether every member has one."""

    t: int
    iops: float
    bytes_per_s: float | None
    members: int
    every: bool


def per_second(members: Sequence[Member]) -> list[Second]:
    """The group's per-second total series, on the common clock, in time order.

    Each sample is moved onto the common clock by its host's offset and counted in the nearest whole second; two
    samples of one member that land in one second (a host's timer jitter) count as their mean. A second counts
    as every member's only when each member has a sample in it: the rest are the ramps at either end, where some
    members had not started or had ended."""
    _check_members(members)
    series = [_by_second(member) for member in members]
    seconds = sorted(set().union(*series))
    found = []
    for t in seconds:
        present = [samples[t] for samples in series if t in samples]
        iops = sum(iops for iops, _ in present)
        found.append(
            Second(t, iops, _sum_or_none([bw for _, bw in present]), len(present), len(present) == len(members))
        )
    return found


def _by_second(member: Member) -> dict[int, tuple[float, float | None]]:
    grouped: dict[int, list[Sample]] = {}
    for sample in member.samples:
        grouped.setdefault(round(member.offset.to_common(sample[0])), []).append(sample)
    return {t: _mean_rates(samples) for t, samples in grouped.items()}


def _mean_rates(samples: Sequence[Sample]) -> tuple[float, float | None]:
    bandwidths = [bw for _, _, bw in samples]
    mean_bw = None if None in bandwidths else statistics.fmean(bw for bw in bandwidths if bw is not None)
    return statistics.fmean(iops for _, iops, _ in samples), mean_bw


def _sum_or_none(values: Sequence[float | None]) -> float | None:
    return None if None in values else sum(value for value in values if value is not None)


@dataclass(frozen=True)
class Rates:
    """One member's IOPS and bytes/s over a window (None: not measured there)."""

    iops: float | None
    bytes_per_s: float | None


@dataclass(frozen=True)
class Total:
    """The group's IOPS and bytes/s over one window, summed over its members (members: each one's figures).

    what says which window, in words; window is it on the common clock (None for the members' whole runs, each its
    own). A sum is None when some member's figure is missing, and why then names them."""

    what: str
    window: Window | None
    iops: float | None
    bytes_per_s: float | None
    members: Mapping[str, Rates]
    why: str = ""


@dataclass(frozen=True)
class Totals:
    """The group's three totals and the windows they were taken over."""

    all_running: Total
    whole_runs: Total
    span: Total
    windows: Windows


ALL_RUNNING = "while every member ran (from the last start to the first end)"
WHOLE_RUNS = "each member's whole run, summed"
SPAN = "all the members' I/O from the first start to the last end"


def totals(members: Sequence[Member]) -> Totals:
    """The group's totals, three ways:

    - all_running: each member's mean over the seconds it measured wholly within the all-running window, summed:
      what the backend gave while every member was running (elbencho's "first done", the "hero number");
    - whole_runs: each member's whole-run IOPS and bytes/s (its summary's), summed; members that ran at other times
      are added as if they ran at once, so this is at least the span's figure and can flatter a staggered group;
    - span: each member's whole-run rate times its run's length (its I/O), summed and divided by the time from the
      first start to the last end (elbencho's "last done": the group is done when its slowest member is)."""
    _check_members(members)
    found = windows({member.name: member.span for member in members})
    return Totals(
        all_running=_all_running_total(members, found.all_running),
        whole_runs=_summed(WHOLE_RUNS, None, {m.name: Rates(m.iops, m.bytes_per_s) for m in members}),
        span=_span_total(members, found.span),
        windows=found,
    )


def _all_running_total(members: Sequence[Member], window: Window | None) -> Total:
    if window is None:
        return Total(ALL_RUNNING, None, None, None, {}, "the members never all ran at once")
    return _summed(ALL_RUNNING, window, {member.name: _rates_within(member, window) for member in members})


def _rates_within(member: Member, window: Window) -> Rates:
    """The member's mean over its samples whose second lies wholly within the window."""
    inside = [
        sample
        for sample in member.samples
        if window.holds(member.offset.to_common(sample[0]) - 1, member.offset.to_common(sample[0]))
    ]
    if not inside:
        return Rates(None, None)
    return Rates(*_mean_rates(inside))


def _span_total(members: Sequence[Member], span: Window) -> Total:
    if span.seconds <= 0:
        return Total(SPAN, span, None, None, {}, "the group's runs last no time")
    rates = {m.name: Rates(_over_span(m.iops, m, span), _over_span(m.bytes_per_s, m, span)) for m in members}
    return _summed(SPAN, span, rates)


def _over_span(rate: float | None, member: Member, span: Window) -> float | None:
    """What the member did (its whole-run rate times its run's length), spread over the span."""
    return None if rate is None else rate * (member.end - member.start) / span.seconds


def _summed(what: str, window: Window | None, rates: Mapping[str, Rates]) -> Total:
    no_iops = [name for name, r in rates.items() if r.iops is None]
    no_bw = [name for name, r in rates.items() if r.bytes_per_s is None]
    why = "; ".join(
        f"{', '.join(names)} {'has' if len(names) == 1 else 'have'} no {figure}"
        for names, figure in ((no_iops, "IOPS"), (no_bw, "bandwidth"))
        if names
    )
    iops = _sum_or_none([r.iops for r in rates.values()])
    return Total(what, window, iops, _sum_or_none([r.bytes_per_s for r in rates.values()]), rates, why)


def _check_members(members: Sequence[Member]) -> None:
    if not members:
        raise ValueError("members: the group has no member")
    names = [member.name for member in members]
    twice = sorted(name for name, count in Counter(names).items() if count > 1)
    if twice:
        raise ValueError(f"members: each member needs its own name; {', '.join(twice)} is given more than once")


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
    return Saturation(
        None, f"total IOPS still grew by {gain * 100:g} % or more per doubling up to {points[-1].members} members", gain
    )


def _gain_per_doubling(before: SizePoint, after: SizePoint) -> float:
    if before.total_iops == 0:
        return math.inf if after.total_iops > 0 else 0.0
    return float((after.total_iops / before.total_iops) ** (1 / math.log2(after.members / before.members)) - 1)


def _saturated_why(point: SizePoint, best: SizePoint, gain: float) -> str:
    per_member = statistics.fmean(point.member_iops)
    return (
        f"from {point.members} members ({format_iops(point.total_iops)}, {format_iops(per_member)} a member on "
        f"average) on, no "
        f"larger group gave {gain * 100:g} % more IOPS per doubling; the most was {best.members} members: "
        f"{format_iops(best.total_iops)}, {_signed_percent(_gain_per_doubling(point, best))} per doubling"
    )


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
