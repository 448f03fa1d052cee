"""Did B differ from A? Two sets of runs' numbers (one metric: IOPS, bandwidth or a latency percentile) compared
with a proper test, the difference with its 95 % confidence interval, and the verdict in words (pure: no Django).

1. Fewer than MIN_RUNS numbers in either set, or every number of both sets the same, is "not enough runs to
   tell": with 4 against 4 no rank test can reach p < 0.05 on its own, and a CI of nothing but ties says
   nothing of the spread.
2. The default test is Mann-Whitney U (two-sided; scipy picks the exact distribution for small sets without
   ties, else the normal approximation with the tie correction). It asks whether one set tends to be larger,
   not whether the means differ, so one bad night does not decide it. Its difference is the Hodges-Lehmann
   estimate (the median of every pairwise difference B - A) with the distribution-free CI that inverts the
   same test (order statistics of the pairwise differences, normal approximation of U's critical value).
3. Welch's t (an option) compares means without assuming equal variances; its difference is the difference of
   the means with Welch's CI.
4. The effect in percent is the difference over A's median (Mann-Whitney) or A's mean (Welch): "B is 12 %
   slower" reads against A. Whether higher is faster depends on the metric (IOPS: yes; latency: no).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

# numpy and scipy are imported where they are used: the pages and the API import this module at every start-up
# and scipy.stats alone took over 1 s there (bench/startup.py).

MIN_RUNS = 5
ALPHA = 0.05
CONFIDENCE = 0.95
MANN_WHITNEY, WELCH = "mann-whitney", "welch"
TESTS = (MANN_WHITNEY, WELCH)
SIGNIFICANT, NOT_SIGNIFICANT, NOT_ENOUGH = "significant", "not_significant", "not_enough"
MINUS = "\u2212"


@dataclass(frozen=True)
class SetSummary:
    n: int
    median: float | None
    mean: float | None


@dataclass(frozen=True)
class Comparison:
    """What the comparison found; every number None when there were not enough runs to tell."""

    test: str
    verdict: str  # SIGNIFICANT | NOT_SIGNIFICANT | NOT_ENOUGH
    text: str
    a: SetSummary
    b: SetSummary
    p_value: float | None = None
    # B - A: the Hodges-Lehmann estimate (Mann-Whitney) or the difference of means (Welch), in the metric's unit.
    difference: float | None = None
    difference_ci: tuple[float, float] | None = None
    # The same over A's median (Mann-Whitney) or mean (Welch), in percent.
    percent: float | None = None
    percent_ci: tuple[float, float] | None = None
    median_difference: float | None = None
    mean_difference: float | None = None
    mean_difference_ci: tuple[float, float] | None = None

    def as_dict(self) -> dict[str, Any]:
        found = asdict(self)
        for key in ("difference_ci", "percent_ci", "mean_difference_ci"):
            found[key] = list(found[key]) if found[key] is not None else None
        return found


def compare(
    a: Sequence[float],
    b: Sequence[float],
    *,
    test: str = MANN_WHITNEY,
    higher_is_faster: bool = True,
    names: tuple[str, str] = ("A", "B"),
) -> Comparison:
    """Compare set B with set A (see the module's docstring for the method)."""
    if test not in TESTS:
        raise ValueError(f"test must be one of {', '.join(TESTS)}; got {test!r}.")
    import numpy as np
    from scipy import stats as scipy_stats

    xa, xb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    summaries = _summary(xa), _summary(xb)
    reason = not_enough(xa, xb, names)
    if reason:
        return Comparison(test, NOT_ENOUGH, reason, *summaries)
    mean_ci = _welch_ci(xa, xb)
    ci: tuple[float, float] | None
    if test == WELCH:
        p_value = float(scipy_stats.ttest_ind(xb, xa, equal_var=False).pvalue)
        difference, ci, base = float(xb.mean() - xa.mean()), mean_ci, float(xa.mean())
    else:
        p_value = float(scipy_stats.mannwhitneyu(xb, xa, alternative="two-sided").pvalue)
        difference, ci = _hodges_lehmann(xa, xb)
        base = float(np.median(xa))
    percent = 100.0 * difference / base if base else None
    percent_ci = (100.0 * ci[0] / base, 100.0 * ci[1] / base) if base and ci else None
    verdict = SIGNIFICANT if p_value < ALPHA else NOT_SIGNIFICANT
    return Comparison(
        test,
        verdict,
        verdict_text(verdict, p_value, percent, percent_ci, higher_is_faster, names),
        *summaries,
        p_value=p_value,
        difference=difference,
        difference_ci=ci,
        percent=percent,
        percent_ci=percent_ci,
        median_difference=float(np.median(xb) - np.median(xa)),
        mean_difference=float(xb.mean() - xa.mean()),
        mean_difference_ci=mean_ci,
    )


def not_enough(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any], names: tuple[str, str]) -> str:
    """Why these sets cannot be told apart, or "" when they can be tested."""
    import numpy as np

    if len(a) < MIN_RUNS or len(b) < MIN_RUNS:
        return (
            f"Not enough runs to tell: {names[0]} has {_runs(len(a))} and {names[1]} has {_runs(len(b))}; "
            f"a comparison needs at least {MIN_RUNS} in each."
        )
    if np.ptp(np.concatenate([a, b])) == 0:
        return (
            f"Not enough runs to tell: every run of both sets measured the same {_number(float(a[0]))}, so there "
            "is no spread to test against."
        )
    return ""


def verdict_text(
    verdict: str,
    p_value: float,
    percent: float | None,
    ci: tuple[float, float] | None,
    higher_is_faster: bool,
    names: tuple[str, str],
) -> str:
    """'B is 12 % slower than A (p = 0.003, 95 % CI -15 % … -9 %)' (with minus signs), or 'No significant
    difference ...'."""
    detail = f"p {_p_text(p_value)}"
    if ci is not None:
        detail += f", 95 % CI {_signed(ci[0])} % … {_signed(ci[1])} %"
    if verdict != SIGNIFICANT or percent is None:
        change = f"; the difference is {_signed(percent)} %" if percent is not None else ""
        return f"No significant difference between {names[1]} and {names[0]} ({detail}{change})."
    faster = (percent > 0) == higher_is_faster
    return f"{names[1]} is {abs(percent):.3g} % {'faster' if faster else 'slower'} than {names[0]} ({detail})."


def _hodges_lehmann(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any]) -> tuple[float, tuple[float, float]]:
    """The median of the pairwise differences B - A and its CI: the k-th smallest and largest of them, k from
    the normal approximation of U's critical value at CONFIDENCE (Hollander & Wolfe, ch. 4)."""
    import numpy as np
    from scipy import stats as scipy_stats

    differences = np.sort(np.subtract.outer(b, a).ravel())
    n, m = len(a), len(b)
    z = float(scipy_stats.norm.ppf(0.5 + CONFIDENCE / 2))
    k = max(0, math.floor(n * m / 2 - z * math.sqrt(n * m * (n + m + 1) / 12)))
    return float(np.median(differences)), (float(differences[k]), float(differences[len(differences) - 1 - k]))


def _welch_ci(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any]) -> tuple[float, float] | None:
    if a.var() == 0 and b.var() == 0:
        return None  # no spread: Welch's standard error is zero and its CI undefined
    from scipy import stats as scipy_stats

    found = scipy_stats.ttest_ind(b, a, equal_var=False).confidence_interval(CONFIDENCE)
    return float(found.low), float(found.high)


def _summary(values: np.ndarray[Any, Any]) -> SetSummary:
    import numpy as np

    if not len(values):
        return SetSummary(0, None, None)
    return SetSummary(len(values), float(np.median(values)), float(values.mean()))


def _p_text(p_value: float) -> str:
    return "< 0.001" if p_value < 0.001 else f"= {p_value:.2g}" if p_value < 0.1 else f"= {p_value:.2f}"


def _signed(value: float | None) -> str:
    if value is None:
        return "—"
    shown = f"{abs(value):.3g}"
    return ("+" if value > 0 else MINUS if value < 0 and shown != "0" else "") + shown


def _number(value: float) -> str:
    return f"{value:,.6g}"


def _runs(n: int) -> str:
    return f"{n} run{'s' if n != 1 else ''}"
