"""Burst credits: a disk's credit bucket and its balance replayed over the disk's runs (pure).

Vendors that sell a burst on credits (gp2, st1, sc1, Azure Premium SSD P1-P20: every catalog burst of `kind:
credit`) run a token bucket: it earns credits at the baseline rate, every I/O spends some, and the disk may run
above its baseline only while credits are left. So while a run does R per second the balance moves by
(baseline - R) per second, held between empty and full, and between runs it refills at the baseline. A new
volume starts full (gp2's "initial credit balance" of 5.4 M I/O credits).

The bucket's metric is the catalog's: `iops` (one credit per I/O, gp2) or `throughput` (credits in bytes, an
I/O spending at least `min_io_bytes`: 1 MiB on st1/sc1). A burst declared as seconds at the burst rate (Azure's
30 minutes) is a bucket of seconds x (burst - baseline) I/Os. Any type the catalog gives such a burst works
without code here.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from jobs.limits.catalog import _Burst, _catalog, _Record
from jobs.limits.evaluation import Limits
from jobs.limits.formulas import duration_text, number

# A run is judged above its baseline only beyond this share of it: fio's averages wander by a few percent.
ABOVE_BASELINE = 1.05
# A run whose predicted end balance is within this share of empty ran the bucket dry.
DRY = 0.01

# Why a burst of another kind has no bucket to model.
NO_BUCKET = {
    "on_demand": "bursts on demand, billed per use: no credits are spent or earned",
    "qos": "bursts by QoS credit that the cluster grants only while it has capacity to spare: not modelled",
    "custom": "has limits typed by hand, with no credit bucket",
}

LABELS = {
    "burst": "served from burst",
    "partly": "partly from burst",
    "baseline": "baseline",
}


@dataclass(frozen=True)
class Bucket:
    """One disk's credit bucket: in I/Os (metric iops) or bytes (metric throughput), totals over its stripes."""

    metric: str
    capacity: float
    refill_per_s: float  # the baseline rate: credits earned per second
    burst_per_s: float  # the full-speed rate, in credits spent per second
    min_io_bytes: int | None = None

    @property
    def unit(self) -> str:
        return "I/O credits" if self.metric == "iops" else "bytes of credit"

    def credits_per_io(self, block_size: float | None) -> float | None:
        """What one I/O spends: a credit, or its size in bytes but at least min_io_bytes; None when unknown."""
        if self.metric == "iops":
            return 1.0
        if not block_size:
            return None
        return max(float(block_size), float(self.min_io_bytes or 0))

    def spend_per_s(self, iops: float | None, bytes_per_s: float | None) -> float | None:
        """Credits a run spent per second, from what it measured: its IOPS, or its bytes per second with each
        I/O rounded up to min_io_bytes (I/Os of one size: max(bytes/s, IOPS x min_io_bytes))."""
        if self.metric == "iops":
            return iops
        if bytes_per_s is None:
            return None
        return max(float(bytes_per_s), (iops or 0.0) * (self.min_io_bytes or 0))

    def after(self, balance: float, seconds: float, spend_per_s: float = 0.0) -> float:
        """The balance `seconds` later, spending `spend_per_s` while earning the baseline."""
        return min(self.capacity, max(0.0, balance + (self.refill_per_s - spend_per_s) * max(0.0, seconds)))

    def lasts(self, balance: float, spend_per_s: float | None = None) -> float:
        """How long `balance` lasts at `spend_per_s` (default: full speed); infinite at or below the baseline."""
        rate = self.burst_per_s if spend_per_s is None else spend_per_s
        return balance / (rate - self.refill_per_s) if rate > self.refill_per_s else math.inf

    def refill_seconds(self, balance: float) -> float:
        """How long an idle disk takes to fill up from `balance`."""
        return (self.capacity - balance) / self.refill_per_s

    def percent(self, balance: float) -> float:
        return 100 * balance / self.capacity

    def amount_text(self, credits: float) -> str:
        """5.4 M I/O credits, or 1 TiB of credit: the bucket's own unit, as the vendor writes it."""
        if self.metric == "iops":
            if credits >= 1e6:
                return f"{number(credits / 1e6, 2)} M I/O credits"
            return f"{number(credits, 0)} I/O credits"
        for factor, unit in ((2**40, "TiB"), (2**30, "GiB"), (2**20, "MiB")):
            if credits >= factor:
                return f"{number(credits / factor, 2)} {unit} of credit"
        return f"{number(credits / 2**20, 3)} MiB of credit"

    def rate_text(self, per_s: float) -> str:
        return f"{number(per_s, 1)} IOPS" if self.metric == "iops" else f"{number(per_s / 2**20, 1)} MiB/s"

    def describe(self) -> str:
        """The model in one sentence, for the page and the API."""
        spends = "one credit per I/O"
        if self.metric == "throughput":
            spends = "each I/O its size in credit"
            if self.min_io_bytes:
                spends += f", at least {number(self.min_io_bytes / 2**20, 3)} MiB"
        return (
            f"Bucket of {self.amount_text(self.capacity)}, earning {self.rate_text(self.refill_per_s)} (the "
            f"baseline) and spending {spends}; full speed {self.rate_text(self.burst_per_s)} drains a full bucket "
            f"in {duration_text(self.lasts(self.capacity))}."
        )


def bucket_for(found: Limits) -> Bucket | str:
    """The credit bucket of a disk with these limits, or the sentence saying why it has none."""
    burst = _record_burst(found)
    if burst is None or burst.kind != "credit":
        how = NO_BUCKET.get(burst.kind, f"bursts by {burst.kind}") if burst is not None else "does not burst"
        return f"No credit bucket: {found.disk_type}{_tier(found)} {how}."
    if found.burst_iops is None and found.burst_throughput_bytes_per_s is None:
        return f"No credit bucket in use: at this size {found.disk_type}'s baseline already reaches its burst rate."
    metric = burst.bucket_metric or "iops"
    base, peak, one_base, one_peak = _rates(found, metric)
    if base is None or peak is None or one_base is None or one_peak is None or base <= 0:
        return f"No credit bucket: the catalog gives {found.disk_type} no baseline and burst {metric} to model it by."
    if peak <= base:
        return f"No credit bucket in use: {found.disk_type}'s instance caps hold its burst at its baseline."
    capacity = _capacity(burst, found, one_base, one_peak)
    if capacity is None:
        return f"No credit bucket: the catalog's {found.record_id} burst has neither a bucket size nor a duration."
    return Bucket(
        metric=metric,
        capacity=capacity,
        refill_per_s=base,
        burst_per_s=peak,
        min_io_bytes=burst.bucket_min_io_bytes if metric == "throughput" else None,
    )


def _record(found: Limits) -> _Record | None:
    kind = _catalog().get(found.disk_type)
    return next((record for record in kind.records if record.id == found.record_id), None) if kind else None


def _record_burst(found: Limits) -> _Burst | None:
    record = _record(found)
    if record is None:
        return None
    if record.tiers:
        tier = next((row for row in record.tiers if row.name == found.tier), None)
        return tier.burst if tier else None
    return record.burst


def _tier(found: Limits) -> str:
    return f" {found.tier}" if found.tier else ""


def _rates(found: Limits, metric: str) -> tuple[float | None, float | None, float | None, float | None]:
    """(refill, full speed) for the whole stripe set, then one volume's (baseline, burst), in the metric.

    Each volume earns its own baseline whatever the instance caps; full speed is the burst under those caps."""
    if metric == "iops":
        one_base, one_peak, peak = found.volume_iops, found.volume_burst_iops, found.burst_iops
    else:
        one_base, one_peak = found.volume_throughput_bytes_per_s, found.volume_burst_throughput_bytes_per_s
        peak = found.burst_throughput_bytes_per_s
    base = one_base * found.stripes if one_base is not None else None
    return base, peak, one_base, one_peak


def _capacity(burst: _Burst, found: Limits, one_base: float, one_peak: float) -> float | None:
    if burst.bucket_size is not None:
        # Metric throughput: bytes of credit per unit of size (st1: 1 TiB per TiB).
        per_size = (found.size or 0.0) if burst.bucket_metric == "throughput" else 1.0
        per_volume = burst.bucket_size * per_size
        return per_volume * found.stripes
    if burst.seconds is not None:
        # Azure states the bucket as time at the burst rate: that many seconds of (burst - baseline).
        return float(burst.seconds) * (one_peak - one_base) * found.stripes
    return None


# ----------------------------------------------------------------------------- the replay


@dataclass(frozen=True)
class Usage:
    """What one finished run did to the bucket: when its I/O started (epoch seconds), for how long, and what it
    measured (total IOPS, bytes per second)."""

    run_id: int
    start_s: float
    seconds: float
    iops: float | None
    bytes_per_s: float | None


@dataclass(frozen=True)
class Passage:
    """One run in the replay: the predicted balance at its start and end, and whether burst served it."""

    run_id: int
    start_s: float
    seconds: float
    spend_per_s: float | None
    start_balance: float
    end_balance: float
    label: str  # burst | partly | baseline | "" (the run measured nothing the bucket counts)
    # Partly: about when the bucket ran dry, at full speed from the start balance.
    dry_after_s: float | None = None

    @property
    def end_s(self) -> float:
        return self.start_s + self.seconds

    @property
    def label_text(self) -> str:
        return LABELS.get(self.label, "not counted: no measured rate")


def replay(bucket: Bucket, usages: Iterable[Usage], *, balance: float | None = None) -> list[Passage]:
    """Each run in time order against the bucket, from `balance` (default full) at the first run's start:
    refilled at the baseline between runs, moved by (baseline - measured rate) during each."""
    level = bucket.capacity if balance is None else balance
    passages: list[Passage] = []
    previous_end: float | None = None
    for usage in usages:
        if previous_end is not None:
            level = bucket.after(level, usage.start_s - previous_end)
        passage = _pass(bucket, usage, level)
        passages.append(passage)
        level, previous_end = passage.end_balance, max(passage.end_s, previous_end or passage.end_s)
    return passages


def _pass(bucket: Bucket, usage: Usage, level: float) -> Passage:
    measured = bucket.spend_per_s(usage.iops, usage.bytes_per_s)
    if measured is None:
        # Nothing the bucket counts was measured: taken as idle (it refills), and said so in the label.
        end = bucket.after(level, usage.seconds)
        return Passage(usage.run_id, usage.start_s, usage.seconds, None, level, end, "")
    # The disk spends at most its full speed: a run measured above it was served the rest by a cache (the
    # page cache, a host cache), which spends no credits. Its efficiency says "above the promise".
    spend = min(measured, bucket.burst_per_s)
    end = bucket.after(level, usage.seconds, spend)
    label, dry_after = "baseline", None
    if spend > bucket.refill_per_s * ABOVE_BASELINE:
        label = "burst"
        if end <= bucket.capacity * DRY:
            label, dry_after = "partly", min(usage.seconds, bucket.lasts(level))
    return Passage(usage.run_id, usage.start_s, usage.seconds, spend, level, end, label, dry_after)


def balance_at(bucket: Bucket, passages: list[Passage], moment_s: float) -> float:
    """The predicted balance at `moment_s`, after the replayed runs (full before any)."""
    if not passages:
        return bucket.capacity
    last = passages[-1]
    return bucket.after(last.end_balance, moment_s - last.end_s)
