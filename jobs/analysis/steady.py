"""Was a run measured in steady state? The stamp every run gets (Run.steady_state), from fio's own verdict when
the profile asked fio to look (`ss`), else from benchweb's check of the per-second samples (pure: no Django).

A stamp is a plain dict:

    {"state": "steady" | "not_steady" | "not_checked", "by": "fio" | "benchweb", "why": words, ...details}

fio's details are as it printed them (`criterion`, `limit`) with the metric, the window (`window_s`) and, once
attained, `at_s`: seconds into the job (ramp included) when the criterion held and fio stopped it.

benchweb's check applies the SNIA Solid State Storage Performance Test Specification's steady-state rule to
the per-second total IOPS, read per-second samples as SNIA's rounds:

1. The measurement window is the last half of the samples, cut into ROUNDS (5) rounds of equal length (a 60 s
   run: its last 30 s, rounds of 6 s); a round's value is the mean of its samples. The first half is left out
   as the warm-up SNIA's earlier rounds are.
2. Data excursion: the rounds' range (max - min) is within RANGE_LIMIT_PERCENT (20 %) of their average.
3. Slope excursion: the least-squares line through the rounds changes by at most SLOPE_LIMIT_PERCENT (10 %)
   of their average across the window (|slope| x (ROUNDS - 1)).

Both must hold. Fewer than MIN_SAMPLES samples (one per round in the window) is not checked, and says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

ROUNDS = 5
RANGE_LIMIT_PERCENT = 20.0
SLOPE_LIMIT_PERCENT = 10.0
MIN_SAMPLES = 2 * ROUNDS
SNIA_RULE = (
    f"SNIA PTS over the last half of the samples in {ROUNDS} rounds: range within {RANGE_LIMIT_PERCENT:g} % "
    f"and fitted slope within {SLOPE_LIMIT_PERCENT:g} % of the average IOPS"
)

STEADY, NOT_STEADY, NOT_CHECKED = "steady", "not_steady", "not_checked"


def stamp(
    fio_records: Sequence[Mapping[str, Any]] | None, samples: Sequence[Mapping[str, Any]], *, time_based: bool = True
) -> dict[str, Any]:
    """The run's stamp: fio's verdict when its output holds one (ParseResult.steadystate), else benchweb's.

    time_based says whether fio ran for its runtime (a job that ends on its size ends for that reason)."""
    if fio_records:
        return from_fio(fio_records, time_based=time_based)
    return judge(samples)


def from_fio(records: Sequence[Mapping[str, Any]], *, time_based: bool = True) -> dict[str, Any]:
    """fio's verdict. Several entries (numjobs without group_reporting) are steady only when every one is."""
    missed = [record for record in records if not record["attained"]]
    if missed:
        record = missed[0]
        ending = "fio's deadline (runtime) came first" if time_based else "the job did its size first"
        why = f"{ending}: its last window measured {record['criterion']} against a limit of {record['limit']}"
        return _fio_stamp(NOT_STEADY, record) | {"why": why}
    record = max(records, key=lambda r: r["elapsed_s"] or 0)
    return _fio_stamp(STEADY, record) | {"at_s": record["elapsed_s"]}


def _fio_stamp(state: str, record: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "state": state,
        "by": "fio",
        "metric": record["metric"],
        "limit": record["limit"],
        "criterion": record["criterion"],
        "window_s": record["duration_s"],
    }


def judge(samples: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """benchweb's SNIA check of the per-second samples ({t_s, read_iops, write_iops}, as the parsers give them)."""
    points = [(float(s["t_s"]), total) for s in samples if (total := _total(s)) is not None]
    per_round = len(points) // 2 // ROUNDS
    if per_round == 0:
        why = (
            "the output holds no per-second samples"
            if not points
            else f"only {len(points)} per-second samples; the check needs at least {MIN_SAMPLES}"
        )
        return _benchweb(NOT_CHECKED) | {"why": why}
    start = len(points) - per_round * ROUNDS
    window = [value for _, value in points[start:]]
    rounds = [sum(window[i : i + per_round]) / per_round for i in range(0, len(window), per_round)]
    average = sum(rounds) / ROUNDS
    details = {"window_s": round(points[-1][0] - points[start - 1][0], 1), "rounds": ROUNDS}
    if average <= 0:
        return _benchweb(NOT_CHECKED) | details | {"why": "no I/O completed in the window"}
    range_percent = (max(rounds) - min(rounds)) / average * 100
    slope_percent = abs(_slope(rounds)) * (ROUNDS - 1) / average * 100
    details |= {
        "average_iops": round(average, 1),
        "range_percent": round(range_percent, 2),
        "slope_percent": round(slope_percent, 2),
    }
    problems = []
    if range_percent > RANGE_LIMIT_PERCENT:
        problems.append(
            f"the rounds' range is {range_percent:.1f} % of their average (at most {RANGE_LIMIT_PERCENT:g} %)"
        )
    if slope_percent > SLOPE_LIMIT_PERCENT:
        problems.append(
            f"the fitted line moves {slope_percent:.1f} % across the window (at most {SLOPE_LIMIT_PERCENT:g} %)"
        )
    if problems:
        return _benchweb(NOT_STEADY) | details | {"why": "; ".join(problems)}
    return _benchweb(STEADY) | details


def _benchweb(state: str) -> dict[str, Any]:
    return {"state": state, "by": "benchweb", "rule": SNIA_RULE}


def _total(sample: Mapping[str, Any]) -> float | None:
    parts = [sample.get("read_iops"), sample.get("write_iops")]
    known = [float(part) for part in parts if part is not None]
    return sum(known) if known else None


def _slope(values: Sequence[float]) -> float:
    """The least-squares slope of values against 0, 1, 2, ... (per round)."""
    mean_x = (len(values) - 1) / 2
    mean_y = sum(values) / len(values)
    covariance = sum((x - mean_x) * (y - mean_y) for x, y in enumerate(values))
    variance = sum((x - mean_x) ** 2 for x in range(len(values)))
    return covariance / variance


def steady_flag(stamp: Mapping[str, Any] | None) -> bool | None:
    """RunResult.steady: True, False, or None when not checked (or never stamped)."""
    state = (stamp or {}).get("state")
    return True if state == STEADY else False if state == NOT_STEADY else None


def describe(stamp: Mapping[str, Any] | None) -> str:
    """The stamp in words, for the run page."""
    if not stamp:
        return "Not checked: this run was stored before benchweb stamped steady state."
    state, by = stamp.get("state"), stamp.get("by")
    if by == "fio":
        criterion = f"{stamp['metric']} {_percent(stamp['limit'])} over {stamp['window_s']} s"
        if state == STEADY:
            when = f" after {stamp['at_s']} s" if stamp.get("at_s") is not None else ""
            return f"Steady state: reached{when} (fio, {criterion})."
        return f"Not steady: {stamp['why']} (fio, {criterion})."
    if state == STEADY:
        return (
            f"Steady state: yes, by benchweb's SNIA check of the last {stamp['window_s']:g} s in {ROUNDS} rounds "
            f"(range {stamp['range_percent']:g} %, slope {stamp['slope_percent']:g} % of the average IOPS)."
        )
    label = "Not steady" if state == NOT_STEADY else "Not checked"
    return f"{label}: {stamp.get('why', 'no reason recorded')} (benchweb's SNIA check)."


def _percent(limit: str) -> str:
    """fio's printed limit shortened for people: "0.300000%" -> "0.3 %", "5.000000" -> "5"."""
    number, percent = limit.removesuffix("%"), limit.endswith("%")
    return f"{float(number):g}" + (" %" if percent else "")
