"""fio's steady-state verdict (the per-job "steadystate" object its JSON holds when a job sets `ss`), read as
printed (pure).

fio prints it as (stat.c, add_ss_json; fio 3.33):

    "steadystate": {"ss": "iops_slope:0.300000%", "duration": 5, "attained": 1, "criterion": "0.000000%",
                    "max_deviation": 0.0, "slope": 0.0, "data": {"iops": [...], "bw": [...], ...}}

`ss` is the criterion and limit asked for, `duration` the window in seconds, `attained` 1 once every value of
the window met it (fio then stops the job), `criterion` what the window measured (a percentage of the mean when
the limit is one). The job entry's `elapsed` (wall seconds since the job started, ramp included) says when it
ended: for an attained job, when the criterion held.
"""

from __future__ import annotations

import re
from typing import Any

from jobs.tools.summary import ParseError, amount, excerpt, finite

METRICS = ("iops", "iops_slope", "bw", "bw_slope")
# fio prints the limit with %f, followed by % when it is a share of the mean.
_SS = re.compile(r"(iops|bw)(_slope)?:([0-9]+(?:\.[0-9]+)?)(%?)")
_CRITERION = re.compile(r"-?[0-9]+(?:\.[0-9]+)?%?|-?nan%?|-?inf%?", re.IGNORECASE)


def steadystate(jobs: list[dict[str, Any]], where: str) -> list[dict[str, Any]] | None:
    """One record per job entry that carries a "steadystate" object, in entry order; None when none does (the
    job set no `ss`). With group_reporting a group has one entry, so one record."""
    records = [
        _record(job["steadystate"], job, f'{where}, job {index}: "steadystate"')
        for index, job in enumerate(jobs, 1)
        if job.get("steadystate") is not None
    ]
    return records or None


def _record(value: Any, job: dict[str, Any], where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ParseError(f"{where} should be a JSON object.")
    asked = _SS.fullmatch(str(value.get("ss", "")))
    if not asked:
        raise ParseError(f'{where}: "ss" should be a criterion and limit like iops_slope:0.3%, not '
                         f"{excerpt(str(value.get('ss')), 40)}.")  # fmt: skip
    attained = finite(value.get("attained"))
    if attained not in (0.0, 1.0):
        raise ParseError(f'{where}: "attained" should be 0 or 1, not {excerpt(str(value.get("attained")), 20)}.')
    criterion = value.get("criterion")
    if not isinstance(criterion, str) or not _CRITERION.fullmatch(criterion):
        raise ParseError(
            f'{where}: "criterion" should be a number as fio prints it, not {excerpt(str(criterion), 30)}.'
        )
    duration = amount(value.get("duration"), f'{where} "duration"')
    elapsed = amount(job.get("elapsed"), f'{where.rsplit(":", 1)[0]}: "elapsed"')
    return {
        "metric": asked[1] + (asked[2] or ""),
        "limit": asked[3] + asked[4],
        "duration_s": None if duration is None else int(duration),
        "attained": attained == 1.0,
        "criterion": criterion,
        "max_deviation": finite(value.get("max_deviation")),
        "slope": finite(value.get("slope")),
        "elapsed_s": None if elapsed is None else int(elapsed),
    }
