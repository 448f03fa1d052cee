"""A synchronised group's clocks (pure): each member host's offset from the common clock (benchweb's worker's), as
NTP estimates it from probes over the host's session, and the spread of the members' starts on the common clock
("started within 0.08 s ± 0.01 s"). jobs/sets/group_totals.py and jobs/sets/group_latency.py give the rest of a
group's numbers; docs/user-guide/groups.md has the rules."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

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
        return f"started within {plus_minus(self.spread_s, self.uncertainty_s)}"


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
    # From the earliest start on: epoch seconds hold a quarter of a microsecond at best, the uncertainties less.
    earliest = min(corrected.values())
    corrected = {name: moment - earliest for name, moment in corrected.items()}
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


def plus_minus(value: float, uncertainty: float, *, signed: bool = False) -> str:
    """'0.08 s ± 0.01 s': the uncertainty to one significant digit (0.0099999 is 0.01, not 0.010), the value to the
    same place (2 to 6 decimal places); signed writes a plus before a positive value (a clock ahead)."""
    places = decimal_places(value, uncertainty)
    sign = "+" if signed else ""
    return f"{value:{sign}.{places}f} s ± {uncertainty:.{places}f} s"


def decimal_places(value: float, uncertainty: float) -> int:
    """How many decimal places show a value known within ± uncertainty: the uncertainty's first digit's place."""
    scale = float(f"{uncertainty if uncertainty > 0 else value:.1g}")
    return 2 if scale <= 0 else min(max(2, -math.floor(math.log10(scale))), 6)
