"""A synchronised group's windows and totals (pure: no Django, no database).

A group runs one profile on several disks at one instant. Each member reports on its own host's clock, starts and
ends a little apart from the others, and brings its own per-second samples. This module turns them into:

- windows: when every member was running at once, and the whole span from the first start to the last end;
- totals: the per-second total series, and the group's IOPS and bytes/s over the all-running window, over each
  member's whole run, and over the whole span.

The clocks (each host's offset, the start spread) are jobs/sets/group_clocks.py's; latency, the members against one
another and the group-size sweep are jobs/sets/group_latency.py's. Nothing here guesses: a number the members'
data cannot give is None, and the result says why.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from jobs.sets.group_clocks import ClockOffset
from jobs.units import format_iops_exact

# A sample: (t, iops, bytes_per_s), t the instant on the member's own clock that ends the second it measured.
Sample = tuple[float, float, float | None]
# How much float rounding may move an instant across a window's edge.
EDGE_S = 1e-6

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
    """One second of the group's per-second series: t, on the common clock, a whole number of seconds after the
    first member's start, the nearest to the samples in it; iops and bytes_per_s summed over the members with a
    sample there (bytes_per_s None when one of those samples has none); every, whether every member has one."""

    t: float
    iops: float
    bytes_per_s: float | None
    members: int
    every: bool


def per_second(members: Sequence[Member]) -> list[Second]:
    """The group's per-second total series, on the common clock, in time order.

    Each sample is moved onto the common clock by its host's offset and counted in the second nearest to it,
    counting whole seconds from the first member's start (not the clock's own whole seconds: two members that
    started 50 ms apart would fall into different seconds whenever a second of the clock began between them); two
    samples of one member that land in one second (a host's timer jitter) count as their mean. A second counts as
    every member's only when each member has a sample in it: the rest are the ramps at either end, where some
    members had not started or had ended."""
    _check_members(members)
    origin = min(member.offset.to_common(member.start) for member in members)
    series = [_by_second(member, origin) for member in members]
    seconds = sorted(set().union(*series))
    found = []
    for k in seconds:
        present = [samples[k] for samples in series if k in samples]
        iops = sum(iops for iops, _ in present)
        found.append(
            Second(
                origin + k, iops, _sum_or_none([bw for _, bw in present]), len(present), len(present) == len(members)
            )
        )
    return found


def _by_second(member: Member, origin: float) -> dict[int, tuple[float, float | None]]:
    """A member's samples by the whole second after `origin` nearest to each (halves round up)."""
    grouped: dict[int, list[Sample]] = {}
    for sample in member.samples:
        grouped.setdefault(math.floor(member.offset.to_common(sample[0]) - origin + 0.5), []).append(sample)
    return {k: _mean_rates(samples) for k, samples in grouped.items()}


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


# ----------------------------------------------------------------------------- 7. the group's limit

# What binds a group's limit: the members' own limits summed, or the backend's cap in IOPS or in MB/s.
MEMBERS, CAP_IOPS, CAP_MB_S = "members", "cap_iops", "cap_mb_s"


@dataclass(frozen=True)
class GroupLimit:
    """The most the group can be promised, in IOPS at its block size (and bytes/s): the lower of its members'
    theoretical limits summed and the backend's cap, where one is given; binds says which (MEMBERS, CAP_IOPS or
    CAP_MB_S; "" when there is no limit). members_iops and members_bytes_per_s are the sum (None when some member
    has no limit: why names them); cap_iops and cap_bytes_per_s the cap as given (None: not given)."""

    iops: float | None
    bytes_per_s: float | None
    binds: str
    members_iops: float | None
    members_bytes_per_s: float | None
    cap_iops: float | None
    cap_bytes_per_s: float | None
    why: str = ""

    def how(self) -> str:
        """Which figure binds ('the members' limits summed', 'the backend's IOPS cap'), or why there is no limit."""
        if self.iops is None:
            return f"no limit: {self.why}" if self.why else "no limit"
        return {MEMBERS: "the members' limits summed", CAP_IOPS: "the backend's IOPS cap",
                CAP_MB_S: "the backend's MB/s cap at the block size"}[self.binds]  # fmt: skip

    def text(self) -> str:
        """'45,000 IOPS (the members' limits summed)', or why there is no limit."""
        return self.how() if self.iops is None else f"{format_iops_exact(self.iops)} ({self.how()})"


def group_limit(
    members: Mapping[str, Rates],
    block_size: int | None,
    cap_iops: float | None = None,
    cap_bytes_per_s: float | None = None,
) -> GroupLimit:
    """The group's limit: each member's theoretical limit (IOPS and bytes/s at the block size, as its run's limits
    snapshot has it) summed, against the backend's cap; the lower binds, compared in IOPS at the block size (a MB/s
    cap without a block size is compared in bytes/s). Nothing is guessed: a member without a limit leaves the sum
    empty, and the cap alone is then the limit. ValueError names a cap that is no rate."""
    for name, cap in (("cap_iops", cap_iops), ("cap_mb_s", cap_bytes_per_s)):
        if cap is not None and not (math.isfinite(cap) and cap > 0):
            raise ValueError(f"{name}: a backend's cap is a rate above 0, not {cap!r}")
    without = [name for name, limit in members.items() if limit.iops is None]
    members_iops = None if without or not members else sum(limit.iops or 0.0 for limit in members.values())
    members_bytes = _sum_or_none([limit.bytes_per_s for limit in members.values()]) if members else None
    reasons = [f"{', '.join(without)} {'has' if len(without) == 1 else 'have'} no theoretical limit"] if without else []
    if cap_bytes_per_s is not None and not block_size:
        reasons.append("the MB/s cap is not compared: the profile has no single block size")
    per_io = {MEMBERS: members_iops, CAP_IOPS: cap_iops,
              CAP_MB_S: cap_bytes_per_s / block_size if cap_bytes_per_s and block_size else None}  # fmt: skip
    known = {name: value for name, value in per_io.items() if value is not None}
    binds = min(known, key=known.__getitem__) if known else ""
    iops = known.get(binds)
    if iops is None or not block_size:
        bytes_per_s = members_bytes if binds == MEMBERS else None
    else:
        bytes_per_s = iops * block_size
    return GroupLimit(
        iops, bytes_per_s, binds, members_iops, members_bytes, cap_iops, cap_bytes_per_s, "; ".join(reasons)
    )


def _check_members(members: Sequence[Member]) -> None:
    if not members:
        raise ValueError("members: the group has no member")
    names = [member.name for member in members]
    twice = sorted(name for name, count in Counter(names).items() if count > 1)
    if twice:
        raise ValueError(f"members: each member needs its own name; {', '.join(twice)} is given more than once")
