"""The search for the most IOPS within a latency target (jobs/analysis/sla_search.py), driven run by run against
synthetic devices whose true answer is known: a queue (p99 = base / (1 - rate / capacity)), other curves that
rise with the rate, a device that cannot deliver, and noise. Pure functions: no database."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import pytest
from hypothesis import assume, event, given, settings
from hypothesis import strategies as st

from jobs.analysis.sla_search import (
    MET,
    SHORT,
    Answer,
    Measurement,
    Next,
    Search,
    answer_sentence,
    next_step,
    runs_needed,
    verdict,
)

FAST = settings(max_examples=200, deadline=None, database=None)

Device = Callable[[int], Measurement]


def queue(capacity: float, base_us: float) -> Device:
    """An open queue: p99 = base / (1 - rate / capacity); at or past its capacity it delivers the capacity."""

    def run(rate: int) -> Measurement:
        if rate >= capacity:
            return Measurement(rate, capacity, base_us * 1e6)
        return Measurement(rate, rate, base_us / (1 - rate / capacity))

    return run


SHAPES: dict[str, Callable[[float], float]] = {
    "queue": lambda x: 1 / (1 - x) if x < 1 else 1e6,
    "exponential": lambda x: math.exp(4 * min(x, 50)),
    "linear": lambda x: 1 + 10 * x,
    "square": lambda x: 1 + 30 * x * x,
    "cliff": lambda x: 1 if x < 0.6 else 40,
}


def shaped(shape: str, scale: float, base_us: float) -> Device:
    return lambda rate: Measurement(rate, rate, base_us * SHAPES[shape](rate / scale))


def drive(search: Search, device: Device) -> tuple[Answer, list[Measurement]]:
    measured: list[Measurement] = []
    while isinstance(step := next_step(search, measured), Next):
        assert all(step.rate != run.rate for run in measured), "a rate is never run twice"
        measured.append(device(step.rate))
    return step, measured


def true_answer(search: Search, device: Device) -> int | None:
    """The highest whole rate in the bounds that meets the target, by bisection over every whole rate (the device's
    verdict rises to a miss once and stays there); None when even the lowest misses."""
    meets = lambda rate: verdict(search, device(rate)) == MET  # noqa: E731
    if not meets(search.low):
        return None
    lo, hi = search.low, search.high + 1
    while hi - lo > 1:
        middle = (lo + hi) // 2
        lo, hi = (middle, hi) if meets(middle) else (lo, middle)
    return lo


@st.composite
def searches(draw: st.DrawFn) -> tuple[Search, float, float]:
    """A search and the device it runs on (its capacity or scale, and its base latency): bounds around the
    capacity, a target from just above the base latency to 50 times it, and from no runs spare to four."""
    capacity, base_us = draw(st.floats(1e3, 1e6)), draw(st.floats(20, 5000))
    low = max(1.0, draw(st.floats(0.0, 0.9)) * capacity)
    high = draw(st.floats(0.95, 2.0)) * capacity
    assume(round(high) > round(low))
    search = Search("p99", base_us * draw(st.floats(1.01, 50)), low, high, max_runs=2)
    return dataclasses.replace(search, max_runs=runs_needed(search) + draw(st.integers(0, 4))), capacity, base_us


def assert_lands_within_one_step(search: Search, device: Device) -> None:
    answer, runs = drive(search, device)
    truth = true_answer(search, device)
    assert len(runs) <= runs_needed(search) <= search.max_runs
    if truth is None:
        event("none met")
        assert answer.best is None and len(runs) == 2
    elif truth >= search.high:
        event("all met")
        assert answer.best.rate == search.high and len(runs) == 1
    else:
        event("found between the bounds")
        assert verdict(search, answer.best) == MET
        assert 0 <= truth - answer.best.rate <= search.step
        assert answer.within <= search.step


@FAST
@given(searches())
def test_on_a_queue_the_search_lands_within_one_step_of_the_true_answer_in_at_most_n_runs(case):
    search, capacity, base_us = case
    assert_lands_within_one_step(search, queue(capacity, base_us))


@FAST
@given(searches(), st.sampled_from(sorted(SHAPES)))
def test_on_any_curve_rising_with_the_rate_it_lands_within_one_step_in_at_most_n_runs(case, shape):
    search, scale, base_us = case
    assert_lands_within_one_step(search, shaped(shape, scale, base_us))


def test_on_a_queue_interpolation_finds_the_answer_in_fewer_runs_than_bisection_would():
    search = Search("p99", 1000, 100, 14000, max_runs=10)
    answer, runs = drive(search, queue(15000, 300))
    assert runs_needed(search) == 7
    # The true answer: 15,000 x (1 - 300 / 1000) = 10,500, met at 10,499 (the float says 999.78 µs), missed one
    # step up.
    assert [run.rate for run in runs] == [14000, 100, 10499, 11194]
    assert answer.best.rate == 10499 and answer.within == 695
    assert answer_sentence(search, answer) == "10,499 IOPS at p99 ≤ 1 ms"


def test_the_first_run_is_the_highest_rate_and_the_second_the_lowest():
    search = Search("p99.9", 2000, 500.4, 30000.6, max_runs=8)
    first = next_step(search, [])
    second = next_step(search, [Measurement(30001, 20000, 9000)])
    assert (first.rate, first.how, second.rate, second.how) == (30001, "highest bound", 500, "lowest bound")


def test_when_the_highest_rate_meets_the_target_that_is_the_answer_after_one_run():
    search = Search("p99", 5000, 100, 8000, max_runs=8)
    answer, runs = drive(search, queue(50000, 100))
    assert len(runs) == 1 and answer.best.rate == 8000 and answer.within is None
    assert answer.why == "the target held at the highest rate, 8,000 IOPS"


def test_when_the_lowest_rate_misses_none_met_and_says_what_the_lowest_measured():
    search = Search("p99", 100, 100, 8000, max_runs=8)
    answer, runs = drive(search, queue(50000, 400))
    assert len(runs) == 2 and answer.best is None
    assert answer_sentence(search, answer) == (
        "none met: at the lowest rate, 100 IOPS, p99 was 401 µs; the target is p99 ≤ 100 µs"
    )


def test_a_run_well_short_of_its_rate_misses_however_low_its_latency():
    """A throttled disk: it delivers at most 8,000 IOPS at 150 µs. A rate up to 8,000 / 0.9 is delivered within the
    10 % tolerance; the answer is the run's measured IOPS, never the rate asked."""
    search = Search("p99", 1000, 100, 20000, max_runs=12)
    answer, runs = drive(search, lambda rate: Measurement(rate, min(rate, 8000), 150))
    assert verdict(search, runs[0]) == SHORT
    assert 0 <= math.floor(8000 / 0.9) - answer.best.rate <= search.step
    assert answer.best.iops == 8000
    assert answer_sentence(search, answer) == "8,000 IOPS at p99 ≤ 1 ms"


def test_a_run_without_the_percentile_in_its_output_misses():
    search = Search("p99", 1000, 100, 20000, max_runs=8)
    assert verdict(search, Measurement(5000, 5000, None)) == "no latency"


@FAST
@given(searches(), st.randoms(use_true_random=False))
def test_on_a_noisy_queue_the_answer_is_always_a_run_that_met_the_target(case, random):
    search, capacity, base_us = case
    clean = queue(capacity, base_us)

    def noisy(rate: int) -> Measurement:
        run = clean(rate)
        return dataclasses.replace(run, latency_us=run.latency_us * random.uniform(0.6, 1.4))

    answer, runs = drive(search, noisy)
    assert len(runs) <= search.max_runs
    if answer.best is not None:
        assert answer.best in runs and verdict(search, answer.best) == MET
        assert answer.best.rate == max(run.rate for run in runs if verdict(search, run) == MET)


def test_a_miss_below_the_best_met_rate_is_shown_but_does_not_move_the_bracket():
    search = Search("p99", 1000, 1000, 20000, max_runs=10)
    runs = [Measurement(20000, 15000, 9000), Measurement(1000, 1000, 300), Measurement(10000, 10000, 700)]
    runs.append(Measurement(5000, 5000, 1200))  # a neighbour's burst
    step = next_step(search, runs)
    assert isinstance(step, Next) and 10000 < step.rate < 20000
    answer = next_step(search, [*runs, Measurement(10950, 10950, 1100), Measurement(10500, 10500, 950)])
    assert answer.best.rate == 10500 and [s.verdict for s in answer.steps][3] == "over target"


def test_out_of_runs_the_answer_is_the_best_so_far_and_says_how_far_it_may_be():
    search = Search("p99", 1000, 100, 20000, max_runs=3)
    answer, runs = drive(search, shaped("linear", 20000, 100))
    assert len(runs) == 3 and answer.best is not None
    assert answer.within > search.step and answer.why.startswith("out of runs after 3: ")


def test_the_step_is_5_percent_of_the_range_or_the_minimum():
    assert Search("p99", 1000, 1000, 21000, max_runs=2).step == 1000
    assert Search("p99", 1000, 10, 30, max_runs=2, min_step=5).step == 5


# ----------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"percentile": "99"}, "percentile"),
        ({"percentile": "p101"}, "percentile"),
        ({"target_us": 0}, "target_us"),
        ({"lowest": 0.2}, "lowest"),
        ({"highest": 100}, "highest"),
        ({"max_runs": 1}, "max_runs"),
        ({"max_runs": 4.0}, "max_runs"),
        ({"step_fraction": 0}, "step_fraction"),
        ({"min_step": 0.5}, "min_step"),
        ({"delivery_tolerance": 1}, "delivery_tolerance"),
    ],
)
def test_a_search_that_cannot_run_is_refused_naming_the_field(change, field):
    with pytest.raises(ValueError, match=f"^{field}: "):
        Search(**{"percentile": "p99", "target_us": 1000, "lowest": 100, "highest": 20000, "max_runs": 8} | change)


@pytest.mark.parametrize(
    ("run", "field"),
    [
        (Measurement(1500.5, 1500, 300), "rate"),  # type: ignore[arg-type]
        (Measurement(0, 0, 300), "rate"),
        (Measurement(1500, -1, 300), "iops"),
        (Measurement(1500, 1500, 0), "latency_us"),
    ],
)
def test_a_measurement_that_cannot_be_one_is_refused_naming_it(run, field):
    search = Search("p99", 1000, 100, 20000, max_runs=8)
    with pytest.raises(ValueError, match=rf"^measured\[1\]\.{field}: "):
        next_step(search, [Measurement(20000, 15000, 9000), run])
