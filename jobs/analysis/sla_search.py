"""The most IOPS whose latency percentile stays under a target: a bounded search over fio's `rate_iops`, one real
run at a time (pure: no Django).

The worker drives it: `next_step(search, measured)` takes the target, the bounds and the runs measured so far and
returns the Next rate to run, or the Answer. It keeps no state of its own, so a worker that restarts asks again
with what is stored.

A run meets the target when its percentile was measured and is at most the target, and it delivered at least
(1 - DELIVERY_TOLERANCE) of the rate asked [90 %]: a run well short of its rate says the device could not deliver
it, whatever its latency. Rates are whole IOPS (fio's rate_iops is an integer): the bounds are rounded to the
nearest. The resolution (step) is STEP_FRACTION of the range between the bounds [5 %], at least min_step [1 IOPS].

The runs, in order:

1. The highest rate (the unthrottled measurement, or the disk's limit). Met: that is the answer; the target does
   not bind below it.
2. The lowest rate. Missed: none met, and nothing lower is tried.
3. Between lo, the highest rate that met, and hi, the lowest rate above lo that missed, until hi - lo <= step:
   - interpolation: the rate where the straight line through lo's and hi's 1/latency reaches 1/target (exact for
     a queue whose latency is base / (1 - rate / capacity)), rounded down, and moved to lo + step or hi - step
     when it falls within a step of either end, so that a good guess closes the bracket with the next run;
     then kept within `reach` of both ends, reach = floor(step) x 2**(n - 1) where n is the runs left (counted
     against runs_needed() as well as max_runs), so that whichever side it lands on, halving can still finish
     within the runs bisection alone would have used: the guesses never cost a run;
   - bisection (the middle, rounded down) when hi has no latency, or its latency met the target (it missed by
     delivery alone: no line to draw), or the bracket is wider than two reaches (short of runs: see 4).
   On a curve whose latency rises with the rate, the true answer (the highest rate that meets the target) lies in
   [lo, hi): lo is within one step of it, found in at most runs_needed() runs (2 + the halvings of the range down
   to the step) as long as max_runs is at least that.
4. Out of runs first (max_runs below runs_needed()): the answer is lo, said to be within hi - lo of the true one.

Noisy curves: the bracket is read from every run so far. A miss below lo (noise, a neighbour's burst) is shown
with the steps but does not move the bracket, so the answer is always a rate that was run and met the target;
its IOPS are what that run measured.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from jobs.units import format_iops_exact, format_micros

STEP_FRACTION = 0.05
DELIVERY_TOLERANCE = 0.10
MIN_RUNS = 2
PERCENTILE = re.compile(r"p(100|[0-9]{1,2}(\.[0-9]+)?)")

MET, OVER_TARGET, SHORT, NO_LATENCY = "met", "over target", "short of the rate", "no latency"


@dataclass(frozen=True)
class Search:
    """What to find (percentile at most target_us) and within what: the rate bounds, the runs, the resolution."""

    percentile: str
    target_us: float
    lowest: float
    highest: float
    max_runs: int
    step_fraction: float = STEP_FRACTION
    min_step: float = 1.0
    delivery_tolerance: float = DELIVERY_TOLERANCE

    def __post_init__(self) -> None:
        if not PERCENTILE.fullmatch(self.percentile):
            raise ValueError(f"percentile: a name such as p99 or p99.9, not {self.percentile!r}")
        if not self.target_us > 0:
            raise ValueError(f"target_us: a latency target is above 0 µs, not {self.target_us!r}")
        if not round(self.lowest) >= 1:
            raise ValueError(f"lowest: the lowest rate is at least 1 IOPS, not {self.lowest!r}")
        if not round(self.highest) > round(self.lowest):
            raise ValueError(f"highest: the highest rate ({self.highest!r}) must be above the lowest ({self.lowest!r})")
        if not (isinstance(self.max_runs, int) and self.max_runs >= MIN_RUNS):
            raise ValueError(f"max_runs: at least {MIN_RUNS} runs (the two bounds), not {self.max_runs!r}")
        if not 0 < self.step_fraction < 1:
            raise ValueError(f"step_fraction: a fraction of the range above 0 and below 1, not {self.step_fraction!r}")
        if not self.min_step >= 1:
            raise ValueError(f"min_step: at least 1 IOPS (rates are whole numbers), not {self.min_step!r}")
        if not 0 <= self.delivery_tolerance < 1:
            raise ValueError(f"delivery_tolerance: a fraction from 0 up to 1, not {self.delivery_tolerance!r}")

    @property
    def low(self) -> int:
        return round(self.lowest)

    @property
    def high(self) -> int:
        return round(self.highest)

    @property
    def step(self) -> float:
        return max(self.step_fraction * (self.high - self.low), self.min_step)


@dataclass(frozen=True)
class Measurement:
    """One run: the rate asked (rate_iops), the IOPS it measured, the searched percentile (None: not in the output)."""

    rate: int
    iops: float
    latency_us: float | None


@dataclass(frozen=True)
class Step:
    measurement: Measurement
    verdict: str


@dataclass(frozen=True)
class Next:
    rate: int
    how: str


@dataclass(frozen=True)
class Answer:
    """The run that met the target at the highest rate (None: none did), every run with its verdict, and how far
    the true answer can be from it in IOPS (None when the bounds decided: all met or none met)."""

    best: Measurement | None
    steps: tuple[Step, ...]
    within: float | None
    why: str


def verdict(search: Search, run: Measurement) -> str:
    if run.iops < (1 - search.delivery_tolerance) * run.rate:
        return SHORT
    if run.latency_us is None:
        return NO_LATENCY
    return MET if run.latency_us <= search.target_us else OVER_TARGET


def runs_needed(search: Search) -> int:
    """The runs that find the answer within one step on any curve whose latency rises with the rate."""
    return MIN_RUNS + _halvings(search.high - search.low, search.step)


def next_step(search: Search, measured: Sequence[Measurement]) -> Next | Answer:
    """The next rate to run, or the answer (the module's docstring gives the order)."""
    _check(measured)
    steps = tuple(Step(run, verdict(search, run)) for run in measured)
    met = [run for run in measured if verdict(search, run) == MET]
    best = max(met, key=lambda run: run.rate, default=None)
    if best is not None and best.rate >= search.high:
        return Answer(best, steps, None, f"the target held at the highest rate, {format_iops_exact(search.high)}")
    if not any(run.rate >= search.high for run in measured):
        return _unless_out_of_runs(search, measured, Next(search.high, "highest bound"))
    if best is None:
        if any(run.rate <= search.low for run in measured):
            return Answer(None, steps, None, _none_met(search, measured))
        return _unless_out_of_runs(search, measured, Next(search.low, "lowest bound"))
    missed = [run for run in measured if run.rate > best.rate and verdict(search, run) != MET]
    above = min(missed, key=lambda run: run.rate)
    width = above.rate - best.rate
    if width <= search.step:
        return Answer(best, steps, width, f"the next rate up, {format_iops_exact(above.rate)}, missed the target")
    left = search.max_runs - len(measured)
    if left <= 0:
        return Answer(
            best, steps, width, f"out of runs after {len(measured)}: {format_iops_exact(above.rate)} missed the target"
        )
    # Interpolation may spend no run that bisection would not: a bad guess costs nothing against it.
    return Next(*_between(search, best, above, min(left, runs_needed(search) - len(measured))))


def answer_sentence(search: Search, answer: Answer) -> str:
    """The answer in words, "14,200 IOPS at p99 ≤ 1 ms", or "none met: " and what the lowest rate measured."""
    if answer.best is None:
        return f"none met: {answer.why}"
    return f"{format_iops_exact(round(answer.best.iops))} at {search.percentile} ≤ {format_micros(search.target_us)}"


def _between(search: Search, lo: Measurement, hi: Measurement, left: int) -> tuple[int, str]:
    """The rate to run inside (lo.rate, hi.rate): the interpolated guess, kept where the runs left can still halve
    the bracket down to the step whichever side it lands on; the middle without a guess."""
    close = max(1, math.floor(search.step))
    # Bisection from a width w needs halvings(w) runs: w <= close x 2**halvings. Either side of the guess must
    # be at most `reach` for the runs left after it to be enough.
    reach = close * 2 ** max(0, left - 1)
    guess = _interpolated(search, lo, hi)
    if guess is None or hi.rate - lo.rate > 2 * reach:
        return lo.rate + (hi.rate - lo.rate) // 2, "bisection"
    if guess - lo.rate < close:
        guess = lo.rate + close
    elif hi.rate - guess < close:
        guess = hi.rate - close
    return min(max(guess, hi.rate - reach), lo.rate + reach), "interpolation"


def _interpolated(search: Search, lo: Measurement, hi: Measurement) -> int | None:
    """Where the line through lo's and hi's 1/latency meets 1/target, rounded down; None without the latencies."""
    if lo.latency_us is None or hi.latency_us is None or hi.latency_us <= search.target_us:
        return None
    lo_inverse, hi_inverse = 1 / lo.latency_us, 1 / hi.latency_us
    share = (lo_inverse - 1 / search.target_us) / (lo_inverse - hi_inverse)
    return lo.rate + math.floor(share * (hi.rate - lo.rate))


def _halvings(width: float, step: float) -> int:
    count = 0
    while width > step:
        width = math.ceil(width / 2)
        count += 1
    return count


def _unless_out_of_runs(search: Search, measured: Sequence[Measurement], proposal: Next) -> Next | Answer:
    if len(measured) < search.max_runs:
        return proposal
    steps = tuple(Step(run, verdict(search, run)) for run in measured)
    return Answer(None, steps, None, f"out of runs after {len(measured)} before the {proposal.how} was run")


def _none_met(search: Search, measured: Sequence[Measurement]) -> str:
    lowest = min(measured, key=lambda run: run.rate)
    found = verdict(search, lowest)
    if found == SHORT:
        seen = f"it delivered {format_iops_exact(round(lowest.iops))}"
    elif found == NO_LATENCY:
        seen = f"its output holds no {search.percentile}"
    else:
        seen = f"{search.percentile} was {format_micros(lowest.latency_us)}"
    return (
        f"at the lowest rate, {format_iops_exact(lowest.rate)}, {seen}; "
        f"the target is {search.percentile} ≤ {format_micros(search.target_us)}"
    )


def _check(measured: Sequence[Measurement]) -> None:
    for index, run in enumerate(measured):
        if not (isinstance(run.rate, int) and run.rate >= 1):
            raise ValueError(f"measured[{index}].rate: the rate asked is a whole number of IOPS, not {run.rate!r}")
        if not run.iops >= 0:
            raise ValueError(f"measured[{index}].iops: a measured IOPS is 0 or more, not {run.iops!r}")
        if run.latency_us is not None and not run.latency_us > 0:
            raise ValueError(f"measured[{index}].latency_us: a latency is above 0 µs, not {run.latency_us!r}")
