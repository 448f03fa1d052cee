"""Efficiency: a measured rate against the disk's promise (pure). Against the baseline and, where the type
bursts, against the burst limit too; above the highest promise is flagged, never shown as success."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

ABOVE = "above the promise: cache, burst or a wrong spec?"
BURSTING = "above the baseline, within the burst limit: burst credits were spent"


def promised_iops(snapshot: dict[str, Any] | None, *, burst: bool = False) -> float | None:
    """The IOPS a run could reach at its block size (while bursting, with burst=True), from its limits snapshot
    (Limits.as_dict); None without limits."""
    if not snapshot or snapshot.get("error"):
        return None
    prefix = "burst_" if burst else ""
    value = snapshot.get(f"effective_{prefix}iops")
    return value if value is not None else snapshot.get(f"{prefix}iops")


def shown_percent(value: float) -> float:
    """A share as it is shown: whole percents from 10 %, tenths below, cut rather than rounded, as fio cuts the
    IOPS it prints. So 3,009.6 IOPS against 100 reads 3,009 % beside fio's "IOPS=3009", and a run at 99.7 % of
    its promise never reads 100 %. (Rounded to a millionth first: 100 * 29 / 100 is 28.999999999999996.)"""
    exact = round(value, 6)
    return float(math.floor(exact)) if exact >= 10 else math.floor(exact * 10) / 10


def percent_text(value: float) -> str:
    """3,009 % or 7.5 %: whole percents with thousands separators, a tenth below 10 % (shown_percent)."""
    shown = shown_percent(value)
    return f"{int(shown):,} %" if shown >= 10 else f"{shown:.1f} %"


@dataclass(frozen=True)
class Efficiency:
    of_baseline: float
    of_burst: float | None = None
    # The limit that applied to the run ("burst" or "baseline"), where the burst-credit model says
    # (jobs/results/burst.py); empty: judged against both.
    applied: str = ""

    @classmethod
    def of(cls, measured: float | None, baseline: float | None, burst: float | None = None) -> Efficiency | None:
        """None when there is nothing to compare: no measurement or no limit."""
        if measured is None or not baseline:
            return None
        bursts = burst is not None and burst > baseline
        return cls(100 * measured / baseline, 100 * measured / burst if bursts and burst else None)

    @classmethod
    def of_run(cls, measured: float | None, snapshot: dict[str, Any] | None) -> Efficiency | None:
        """A run's efficiency against the limits it was made against (its snapshot)."""
        return cls.of(measured, promised_iops(snapshot), promised_iops(snapshot, burst=True))

    @classmethod
    def against(cls, measured: float | None, snapshot: dict[str, Any] | None, applied: str | None) -> Efficiency | None:
        """A run's efficiency against the limit that applied to it: the baseline alone for a run the bucket did
        not serve, the burst limit first for one it did; against both where nothing says (`applied` None)."""
        found = cls.of_run(measured, snapshot)
        if found is None or applied is None or (applied == "burst" and found.of_burst is None):
            return found
        if applied == "baseline":
            return cls(found.of_baseline, applied=applied)
        return cls(found.of_baseline, found.of_burst, applied=applied)

    @property
    def applied_percent(self) -> float:
        """The share of the limit that applied (the highest promise where none is known)."""
        return self.of_baseline if self.applied == "baseline" else self.highest

    @property
    def highest(self) -> float:
        """The share of the highest promise: the burst limit where there is one."""
        return self.of_burst if self.of_burst is not None else self.of_baseline

    @property
    def above(self) -> bool:
        return shown_percent(self.highest) > 100

    @property
    def bursting(self) -> bool:
        return not self.above and shown_percent(self.of_baseline) > 100

    @property
    def text(self) -> str:
        if self.applied == "baseline":
            return f"{percent_text(self.of_baseline)} of the baseline, the limit that applied"
        if self.of_burst is None:
            return percent_text(self.of_baseline)
        if self.applied == "burst":
            of_baseline = percent_text(self.of_baseline)
            return f"{percent_text(self.of_burst)} of the burst limit, which applied ({of_baseline} of baseline)"
        return f"{percent_text(self.of_baseline)} of baseline, {percent_text(self.of_burst)} of burst"

    @property
    def flag(self) -> str:
        return ABOVE if self.above else BURSTING if self.bursting else ""

    @property
    def css(self) -> str:
        """eff-above (a warning), eff-burst, eff-low below 50 %, eff-mid below 85 %, else plain eff."""
        if self.above:
            return "eff-above"
        if self.bursting:
            return "eff-burst"
        if self.of_baseline < 50:
            return "eff-low"
        return "eff-mid" if self.of_baseline < 85 else ""

    @property
    def flag_css(self) -> str:
        """The css of a flag alone (eff-above, eff-burst): a throughput far below its cap is no fault at small
        blocks, so a throughput efficiency is never coloured as low."""
        return self.css if self.above or self.bursting else ""

    def __float__(self) -> float:
        return self.of_baseline
