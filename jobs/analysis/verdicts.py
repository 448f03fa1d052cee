"""Is the number the disk's? The verdicts a run's facts and its host's telemetry allow (pure: no Django).

A run measured the disk unless something else set its number: the client's CPU, a cache, the cloud's cap, one
slow member of a stripe, or a host busy with something else. `judge` looks at the run's facts and the host's
seconds in the run's measured window and returns the verdicts it can back with numbers, each as

    {"kind": "client_bound", "text": "client-bound: CPU 3 was 99 % busy for 58 of 60 s while ...",
     "evidence": {the numbers the sentence was made from}}

An empty list means "measured the disk": nothing found says otherwise. Every rule's limits are thresholds
(THRESHOLDS, defaults in DEFAULT_THRESHOLDS) that a team may change; docs/user-guide/verdicts.md lists them.

The rules (seconds are the samples that reported what the rule reads; a rule on seconds needs at least
`min_seconds` of them, or it says nothing):

- client_bound: the busiest CPU was at least `client_cpu_busy_percent` busy in at least `client_share_percent`
  of the seconds while fio itself used at least `client_fio_share_percent` of a CPU per job (where fio printed
  its CPU use: else the busy CPU is another program's), or fio's own usr + sys per job reached
  `client_cpu_busy_percent`; and the run's device was
  on average under `client_device_util_percent` utilised. A run with no block device under it (fio's null
  engine, a tmpfs) or whose device the host did not report is judged on the CPU alone, and the sentence says so.
- cache_suspected: buffered I/O (direct=0); or a pure read (read, randread) above the disk's physical limit
  by more than `cache_above_limit_percent` (the promised limit when the physical one is not known: a disk
  may burst above its promise without a cache); or a test size (size per job x jobs) under
  `cache_size_bandwidth_ratio` times the measured bytes per second, Longhorn kbench's rule. These need no
  seconds.
- device_saturated: the device at least `saturated_util_percent` utilised in at least
  `saturated_share_percent` of the seconds, with its average queue (iostat's aqu-sz) at least
  `saturated_queue_high` requests or growing, its last third's mean at least `saturated_queue_growth` times
  its first third's.
- throttled_at_promise: the measured IOPS (or bytes/s) within `throttle_within_percent` of the disk's limit,
  the device's own per-second figure flat (its coefficient of variation within the same percentage), and
  the device on average at most `throttle_device_util_percent` utilised. The cloud's cap: expected. A virtual
  disk with requests always in flight reads near 100 % utilised in the guest even when the cap holds it;
  a team whose disks do that raises `throttle_device_util_percent` to 100.
- stripe_imbalance: a member of the device (LVM, md or device-mapper stripes) whose mean util is at least
  `stripe_ratio` times and `stripe_util_points` points above the other members' median, or whose mean await
  is at least `stripe_ratio` times and `stripe_await_ms` above theirs.
- host_under_pressure: CPU or memory pressure (PSI "some") at least `pressure_some_percent`, or steal at
  least `steal_percent`, in at least `pressure_share_percent` of the seconds. I/O pressure is left out: fio
  waiting on the disk under test is I/O pressure by design.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

from jobs import units

# The host's seconds, as the telemetry gives them. Keys are absent where the host did not report them;
# percentages are 0-100 over that second.


class BusiestCpu(TypedDict):
    cpu: int
    busy: float


class CpuSecond(TypedDict, total=False):
    user: float
    system: float
    iowait: float
    steal: float
    idle: float
    busiest: BusiestCpu


class MemorySecond(TypedDict, total=False):
    total_bytes: int
    available_bytes: int
    cached_bytes: int
    dirty_bytes: int


class PressureSecond(TypedDict, total=False):
    io_some: float
    io_full: float
    cpu_some: float
    memory_some: float
    memory_full: float


class DeviceSecond(TypedDict, total=False):
    read_iops: float
    write_iops: float
    read_mb_s: float
    write_mb_s: float
    queue: float  # average queue size, iostat's aqu-sz
    await_ms: float
    util: float  # %


class Sample(TypedDict, total=False):
    t: float  # epoch seconds
    cpu: CpuSecond
    memory: MemorySecond
    load1: float
    pressure: PressureSecond
    devices: dict[str, DeviceSecond]  # by kernel name: vdb, dm-3, md0


class Chain(TypedDict):
    device: str | None  # the run's device (dm-3); None when not known
    members: list[str]  # its member devices for LVM/md/dm stripes; empty for a plain disk


class Verdict(TypedDict):
    kind: str
    text: str
    evidence: dict[str, Any]


@dataclass(frozen=True)
class RunFacts:
    """What the run was and what it measured. None is "not known": a rule that needs it does not fire."""

    direct: bool | None  # fio's direct=1; buffered is its opposite
    rw: str  # fio's rw: read, randread, write, randrw, ...
    size_bytes: int | None  # fio's size, per job; 0 (a whole device) reads as not known
    jobs: int  # fio's numjobs
    iops: float | None  # total, reads and writes
    bytes_per_s: float | None  # total
    runtime_s: float | None  # the measured window
    fio_usr_percent: float | None = None  # fio's cpu line, per job
    fio_sys_percent: float | None = None
    limit_iops: float | None = None  # the disk's promised limit; None: no limit
    limit_bytes_per_s: float | None = None
    physical_iops: float | None = None  # what the device itself can do, when known
    physical_bytes_per_s: float | None = None

    @property
    def buffered(self) -> bool:
        return self.direct is False


CLIENT_BOUND, CACHE_SUSPECTED, DEVICE_SATURATED = "client_bound", "cache_suspected", "device_saturated"
THROTTLED_AT_PROMISE, STRIPE_IMBALANCE, HOST_UNDER_PRESSURE = (
    "throttled_at_promise",
    "stripe_imbalance",
    "host_under_pressure",
)
LABELS = {
    CLIENT_BOUND: "client-bound",
    CACHE_SUSPECTED: "cache suspected",
    DEVICE_SATURATED: "device saturated",
    THROTTLED_AT_PROMISE: "throttled at the promise",
    STRIPE_IMBALANCE: "stripe imbalance",
    HOST_UNDER_PRESSURE: "host under pressure",
}
# The verdicts that say a run's number was not the disk's (the client, a cache or the host held it): change-point
# detection reads a series without such runs. The others are the disk's own behaviour, worth seeing shift: a
# saturated device, a cloud's cap, a slow stripe member.
NOT_THE_DISKS = (CLIENT_BOUND, CACHE_SUSPECTED, HOST_UNDER_PRESSURE)
PURE_READS = frozenset({"read", "randread"})


def verdict_names() -> list[tuple[str, str]]:
    """(kind, label) of every verdict, in the order they are judged: for choices, filters and legends."""
    return list(LABELS.items())


def label(kind: str) -> str:
    return LABELS.get(kind, kind)


@dataclass(frozen=True)
class Threshold:
    """One adjustable limit of a rule: its key, the verdict it belongs to, its unit, default and range."""

    key: str
    kind: str
    label: str
    unit: str
    default: float
    low: float
    high: float
    meaning: str


THRESHOLDS = (
    Threshold("min_seconds", "", "Fewest seconds to judge", "s", 10, 1, 3600,
              "Rules that read the host's seconds say nothing with fewer seconds than this."),
    Threshold("client_cpu_busy_percent", CLIENT_BOUND, "CPU saturated at", "%", 95, 50, 100,
              "A CPU (the busiest of each second), or fio's usr + sys per job, this busy is saturated."),
    Threshold("client_share_percent", CLIENT_BOUND, "CPU saturated for", "% of seconds", 80, 1, 100,
              "The share of the seconds the busiest CPU must be saturated in."),
    Threshold("client_fio_share_percent", CLIENT_BOUND, "fio's own CPU at least", "% of a CPU", 25, 0, 100,
              "Where fio printed its CPU use: a saturated CPU counts only if fio used at least this much of one per "
              "job (else the load is another program's)."),
    Threshold("client_device_util_percent", CLIENT_BOUND, "Device idle below", "% util", 70, 1, 100,
              "The device's mean utilisation must stay under this for the client to be the limit."),
    Threshold("cache_size_bandwidth_ratio", CACHE_SUSPECTED, "Test size at least", "× the bandwidth", 25, 1, 1000,
              "A test size (size × jobs) under this many seconds of the measured bandwidth fits a cache."),
    Threshold("cache_above_limit_percent", CACHE_SUSPECTED, "Reads above the limit by", "%", 10, 0, 1000,
              "Pure reads this far above the disk's physical (else promised) limit came from a cache."),
    Threshold("saturated_util_percent", DEVICE_SATURATED, "Device saturated at", "% util", 98, 50, 100,
              "A device this utilised in a second was busy all of it."),
    Threshold("saturated_share_percent", DEVICE_SATURATED, "Device saturated for", "% of seconds", 80, 1, 100,
              "The share of the seconds the device must be saturated in."),
    Threshold("saturated_queue_high", DEVICE_SATURATED, "Queue high at", "requests", 2, 0, 100000,
              "A mean queue (aqu-sz) this long means requests waited on the device."),
    Threshold("saturated_queue_growth", DEVICE_SATURATED, "Queue growing by", "× the first third", 1.5, 1, 1000,
              "The queue's last third this many times its first third is growing."),
    Threshold("throttle_within_percent", THROTTLED_AT_PROMISE, "At the limit within", "%", 5, 0, 50,
              "IOPS or bytes/s this close to the limit, and this flat second by second, are held at it."),
    Threshold("throttle_device_util_percent", THROTTLED_AT_PROMISE, "Device not busy up to", "% util", 90, 1, 100,
              "The device's mean utilisation at most this: the cap, not the device, held the number."),
    Threshold("stripe_ratio", STRIPE_IMBALANCE, "Member above the others by", "× the median", 1.5, 1, 100,
              "A member's util or await this many times the other members' median."),
    Threshold("stripe_util_points", STRIPE_IMBALANCE, "and util above by", "points", 20, 0, 100,
              "... and this many percentage points of util above it."),
    Threshold("stripe_await_ms", STRIPE_IMBALANCE, "or await above by", "ms", 1, 0, 100000,
              "... or this many milliseconds of await above it."),
    Threshold("pressure_some_percent", HOST_UNDER_PRESSURE, "CPU or memory pressure at", "% PSI some", 10, 1, 100,
              "CPU or memory pressure stall (PSI some) this high in a second is pressure."),
    Threshold("steal_percent", HOST_UNDER_PRESSURE, "Steal at", "%", 5, 1, 100,
              "CPU time the hypervisor gave to others this high in a second is pressure."),
    Threshold("pressure_share_percent", HOST_UNDER_PRESSURE, "Under pressure for", "% of seconds", 20, 1, 100,
              "The share of the seconds under pressure for the host to be under pressure."),
)  # fmt: skip
THRESHOLD_BY_KEY = {threshold.key: threshold for threshold in THRESHOLDS}
DEFAULT_THRESHOLDS: dict[str, float] = {threshold.key: float(threshold.default) for threshold in THRESHOLDS}


def threshold_problems(values: Mapping[str, object]) -> dict[str, str]:
    """What is wrong with a team's thresholds, by key: an unknown key, a value that is not a number or is
    outside its range. Empty when all is well."""
    problems = {}
    for key, value in values.items():
        threshold = THRESHOLD_BY_KEY.get(key)
        if threshold is None:
            problems[key] = f"{key}: there is no such threshold; the thresholds are {', '.join(DEFAULT_THRESHOLDS)}."
        elif (problem := _value_problem(threshold, value)) is not None:
            problems[key] = problem
    return problems


def _value_problem(threshold: Threshold, value: object) -> str | None:
    fix = (
        f"give a number from {threshold.low:g} to {threshold.high:g} {threshold.unit}, "
        f"e.g. {threshold.default:g} (the default)"
    )
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
        return f"{threshold.key}: {value!r} is not a number; {fix}."
    if value < threshold.low:
        return f"{threshold.key}: {value:g} is below {threshold.low:g}; {fix}."
    if value > threshold.high:
        return f"{threshold.key}: {value:g} is above {threshold.high:g}; {fix}."
    return None


def merged_thresholds(team: Mapping[str, object] | None) -> dict[str, float]:
    """The defaults with a team's own values over them. A stored key that is no longer a threshold, or a value
    now out of range, is left out: the default holds."""
    own = dict(team or {})
    problems = threshold_problems(own)
    return DEFAULT_THRESHOLDS | {key: number(value) or 0.0 for key, value in own.items() if key not in problems}


def judge(
    samples: Sequence[Sample], chain: Chain, run: RunFacts, thresholds: Mapping[str, object] | None = None
) -> list[Verdict]:
    """Every verdict the run's facts and its host's seconds back, in the order of LABELS; [] when the number is
    the disk's as far as they tell. `thresholds`: a team's values, merged over DEFAULT_THRESHOLDS."""
    limits = merged_thresholds(thresholds)
    window = Window(samples, chain, limits)
    rules: list[Callable[[Window, RunFacts, dict[str, float]], Verdict | None]] = [
        client_bound, cache_suspected, device_saturated, throttled_at_promise, stripe_imbalance, host_under_pressure
    ]  # fmt: skip
    return [verdict for rule in rules if (verdict := rule(window, run, limits)) is not None]


class Window:
    """The host's seconds of one run in time order, read the ways the rules read them. A series is the values of
    the seconds that reported them; a series shorter than `min_seconds` is too short to judge and reads as empty."""

    def __init__(self, samples: Sequence[Sample], chain: Chain, limits: Mapping[str, float]) -> None:
        self.samples = sorted(samples, key=lambda sample: sample.get("t", 0.0))  # a queue grows in time order
        self.device = chain.get("device")
        self.members = [name for name in chain.get("members") or [] if name != self.device]
        self.min_seconds = int(limits["min_seconds"])

    def series(self, read: Callable[[Sample], float | None]) -> list[float]:
        values = [value for sample in self.samples if (value := read(sample)) is not None]
        return values if len(values) >= self.min_seconds else []

    def device_series(self, name: str | None, field: str) -> list[float]:
        if name is None:
            return []
        return self.series(lambda sample: number(sample.get("devices", {}).get(name, {}).get(field)))

    def device_util(self) -> list[float]:
        """The run's device's util; when the host reported only its members, the busiest member's each second."""
        own = self.device_series(self.device, "util")
        if own or not self.members:
            return own

        def busiest_member(sample: Sample) -> float | None:
            devices = sample.get("devices", {})
            utils = [u for name in self.members if (u := number(devices.get(name, {}).get("util"))) is not None]
            return max(utils) if utils else None

        return self.series(busiest_member)


def client_bound(window: Window, run: RunFacts, limits: Mapping[str, float]) -> Verdict | None:
    busy_at = limits["client_cpu_busy_percent"]
    busiest = [b for sample in window.samples if (b := _busiest(sample)) is not None]
    if len(busiest) < window.min_seconds:
        busiest = []
    saturated = [b for b in busiest if b["busy"] >= busy_at]
    fio_cpu = _sum_or_none(run.fio_usr_percent, run.fio_sys_percent)
    # A saturated CPU is the client's only where fio itself used a good share of one: else it is someone else's
    # load on the host (host under pressure says that), not fio running out of CPU.
    fio_busy = fio_cpu is None or fio_cpu >= limits["client_fio_share_percent"]
    cpu_bound = bool(busiest) and fio_busy and len(saturated) >= limits["client_share_percent"] / 100 * len(busiest)
    fio_bound = fio_cpu is not None and fio_cpu >= busy_at
    if not (cpu_bound or fio_bound) or len(window.samples) < window.min_seconds:
        return None
    util = window.device_util()
    mean_util = statistics.fmean(util) if util else None
    if mean_util is not None and mean_util >= limits["client_device_util_percent"]:
        return None
    evidence: dict[str, Any] = {"device": window.device, "device_util_percent": _rounded(mean_util)}
    causes = []
    if cpu_bound:
        cpus = Counter(b["cpu"] for b in saturated)
        cpu, times = cpus.most_common(1)[0]
        busy = statistics.median(b["busy"] for b in saturated)
        who = f"CPU {cpu}" if times == len(saturated) else f"a CPU (CPU {cpu} most often)"
        causes.append(f"{who} was {busy:.0f} % busy for {len(saturated)} of {len(busiest)} s")
        evidence |= {"cpu": cpu, "cpu_busy_percent": _rounded(busy), "saturated_s": len(saturated),
                     "seconds": len(busiest)}  # fmt: skip
    if fio_bound:
        assert fio_cpu is not None  # fio_bound says so
        each = "its job" if run.jobs == 1 else f"each of its {run.jobs} jobs"
        causes.append(
            f"fio used {fio_cpu:.0f} % of a CPU for {each} "
            f"(usr {run.fio_usr_percent:g} % + sys {run.fio_sys_percent:g} %)"
        )
        evidence |= {"fio_cpu_percent": _rounded(fio_cpu), "jobs": run.jobs}
    device = _device_name(window.device)
    if mean_util is None:
        state = f"{device}'s utilisation was not reported" if window.device else "no block device was reported"
    else:
        state = f"{device} was {mean_util:.0f} % utilised"
    return _verdict(CLIENT_BOUND, f"{' and '.join(causes)} while {state}", evidence)


def cache_suspected(window: Window, run: RunFacts, limits: Mapping[str, float]) -> Verdict | None:
    reasons: list[str] = []
    evidence: dict[str, Any] = {}
    if run.buffered:
        reasons.append("buffered I/O (direct=0) goes through the page cache")
        evidence["direct"] = False
    above = _reads_above_limit(run, limits["cache_above_limit_percent"])
    if above is not None:
        reasons.append(above[0])
        evidence |= above[1]
    test_size = run.size_bytes * run.jobs if run.size_bytes else None
    ratio = limits["cache_size_bandwidth_ratio"]
    if test_size is not None and run.bytes_per_s and test_size < ratio * run.bytes_per_s:
        jobs = f"{run.jobs} jobs × {units.format_bytes(run.size_bytes)}" if run.jobs > 1 else "1 job"
        reasons.append(
            f"the test size {units.format_bytes(test_size)} ({jobs}) is under {ratio:g}× the measured "
            f"{units.format_bytes_per_s(run.bytes_per_s)} ({units.format_bytes(ratio * run.bytes_per_s)})"
        )
        evidence |= {"test_size_bytes": test_size, "bytes_per_s": run.bytes_per_s, "size_bandwidth_ratio": ratio}
    if not reasons:
        return None
    return _verdict(CACHE_SUSPECTED, "; ".join(reasons), evidence)


def _reads_above_limit(run: RunFacts, margin_percent: float) -> tuple[str, dict[str, Any]] | None:
    """Pure reads above the physical limit (or the promise when the physical one is not known) by the margin."""
    if run.rw not in PURE_READS:
        return None
    candidates = [
        ("IOPS", run.iops, run.physical_iops, run.limit_iops, units.format_iops_exact),
        ("bytes/s", run.bytes_per_s, run.physical_bytes_per_s, run.limit_bytes_per_s, units.format_bytes_per_s),
    ]
    for metric, measured, physical, promised, shown in candidates:
        limit, which = (physical, "physical") if physical else (promised, "promised")
        if measured and limit and measured > limit * (1 + margin_percent / 100):
            over = (measured / limit - 1) * 100
            text = f"reads of {shown(measured)} are {over:.0f} % above the disk's {which} limit of {shown(limit)}"
            return text, {"metric": metric, "measured": measured, "limit": limit, "limit_kind": which}
    return None


def device_saturated(window: Window, run: RunFacts, limits: Mapping[str, float]) -> Verdict | None:
    util = window.device_series(window.device, "util")
    if not util:
        return None
    busy = sum(1 for u in util if u >= limits["saturated_util_percent"])
    if busy < limits["saturated_share_percent"] / 100 * len(util):
        return None
    queue = window.device_series(window.device, "queue")
    if not queue:
        return None
    third = max(1, len(queue) // 3)
    first, last, mean = statistics.fmean(queue[:third]), statistics.fmean(queue[-third:]), statistics.fmean(queue)
    growing = first > 0 and last >= limits["saturated_queue_growth"] * first
    if not growing and mean < limits["saturated_queue_high"]:
        return None
    device = _device_name(window.device)
    queue_text = f"its queue grew from {first:.1f} to {last:.1f}" if growing else f"its queue averaged {mean:.1f}"
    at = limits["saturated_util_percent"]
    text = f"{device} was at least {at:g} % utilised for {busy} of {len(util)} s and {queue_text}"
    evidence = {"device": window.device, "busy_s": busy, "seconds": len(util), "queue_mean": _rounded(mean),
                "queue_first_third": _rounded(first), "queue_last_third": _rounded(last)}  # fmt: skip
    return _verdict(DEVICE_SATURATED, text, evidence)


def throttled_at_promise(window: Window, run: RunFacts, limits: Mapping[str, float]) -> Verdict | None:
    within = limits["throttle_within_percent"]
    util = window.device_util()
    if not util or statistics.fmean(util) > limits["throttle_device_util_percent"]:
        return None
    candidates = [
        ("IOPS", run.iops, run.limit_iops, ("read_iops", "write_iops"), units.format_iops_exact),
        ("bytes/s", run.bytes_per_s, run.limit_bytes_per_s, ("read_mb_s", "write_mb_s"), units.format_bytes_per_s),
    ]
    for metric, measured, limit, fields, shown in candidates:
        if not measured or not limit or abs(measured - limit) > within / 100 * limit:
            continue
        per_second = _device_totals(window, fields)
        if len(per_second) < 2 or statistics.fmean(per_second) <= 0:
            continue
        variation = statistics.pstdev(per_second) / statistics.fmean(per_second) * 100
        if variation > within:
            continue
        mean_util = statistics.fmean(util)
        text = (
            f"{shown(measured)} held within {abs(measured - limit) / limit * 100:.1f} % of the disk's limit of "
            f"{shown(limit)}, flat to {variation:.1f} % second by second, while {_device_name(window.device)} was "
            f"{mean_util:.0f} % utilised: the cloud's cap, expected"
        )
        evidence = {"metric": metric, "measured": measured, "limit": limit, "variation_percent": _rounded(variation),
                    "device_util_percent": _rounded(mean_util)}  # fmt: skip
        return _verdict(THROTTLED_AT_PROMISE, text, evidence)
    return None


def _device_totals(window: Window, fields: tuple[str, str]) -> list[float]:
    """The device's reads + writes each second it reported either."""

    def total(sample: Sample) -> float | None:
        second = sample.get("devices", {}).get(window.device or "", {})
        parts = [v for field in fields if (v := number(second.get(field))) is not None]
        return sum(parts) if parts else None

    return window.series(total)


@dataclass(frozen=True)
class _Member:
    name: str
    util: float | None  # mean over the seconds
    await_ms: float | None


def stripe_imbalance(window: Window, run: RunFacts, limits: Mapping[str, float]) -> Verdict | None:
    if len(window.members) < 2:
        return None
    members = [
        _Member(name, _mean(window.device_series(name, "util")), _mean(window.device_series(name, "await_ms")))
        for name in window.members
    ]
    flagged = []
    for member in members:
        others = [other for other in members if other is not member]
        util_median = _median([o.util for o in others if o.util is not None])
        wait_median = _median([o.await_ms for o in others if o.await_ms is not None])
        util_high = _far_above(member.util, util_median, limits["stripe_ratio"], limits["stripe_util_points"])
        wait_high = _far_above(member.await_ms, wait_median, limits["stripe_ratio"], limits["stripe_await_ms"])
        if util_high or wait_high:
            flagged.append((member, _Member("the others", util_median, wait_median)))
    if not flagged:
        return None
    worst, median = flagged[0]
    also = f" (also {', '.join(member.name for member, _ in flagged[1:])})" if len(flagged) > 1 else ""
    text = (
        f"{worst.name} was {_pair(worst)} against a median of {_pair(median)} for the other {len(members) - 1} "
        f"members of {window.device or 'the stripe'}{also}"
    )
    evidence = {
        "device": window.device,
        "members": [
            {"member": member.name, "util_percent": _rounded(member.util), "await_ms": _rounded(member.await_ms),
             "others_util_percent": _rounded(median.util), "others_await_ms": _rounded(median.await_ms)}
            for member, median in flagged
        ],
    }  # fmt: skip
    return _verdict(STRIPE_IMBALANCE, text, evidence)


def _far_above(value: float | None, median: float | None, ratio: float, margin: float) -> bool:
    return value is not None and median is not None and value >= ratio * median and value >= median + margin


def _pair(member: _Member) -> str:
    util = f"{member.util:.0f} % utilised" if member.util is not None else ""
    wait = f"await {member.await_ms:.2f} ms" if member.await_ms is not None else ""
    return ", ".join(part for part in (util, wait) if part)


def _mean(values: Sequence[float]) -> float | None:
    return statistics.fmean(values) if values else None


def _median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def host_under_pressure(window: Window, run: RunFacts, limits: Mapping[str, float]) -> Verdict | None:
    share = limits["pressure_share_percent"] / 100
    readings = [
        ("CPU pressure (PSI some)", "cpu_some", limits["pressure_some_percent"],
         lambda s: number(s.get("pressure", {}).get("cpu_some"))),
        ("memory pressure (PSI some)", "memory_some", limits["pressure_some_percent"],
         lambda s: number(s.get("pressure", {}).get("memory_some"))),
        ("steal", "steal", limits["steal_percent"], lambda s: number(s.get("cpu", {}).get("steal"))),
    ]  # fmt: skip
    reasons: list[str] = []
    evidence: dict[str, Any] = {}
    for name, key, at, read in readings:
        values = window.series(read)
        high = [v for v in values if v >= at]
        if values and high and len(high) >= share * len(values):
            reasons.append(f"{name} was at least {at:g} % in {len(high)} of {len(values)} s, at most {max(high):.0f} %")
            evidence[key] = {"high_s": len(high), "seconds": len(values), "max_percent": _rounded(max(high))}
    if not reasons:
        return None
    return _verdict(HOST_UNDER_PRESSURE, "; ".join(reasons), evidence)


def _verdict(kind: str, why: str, evidence: dict[str, Any]) -> Verdict:
    return {"kind": kind, "text": f"{LABELS[kind]}: {why}", "evidence": evidence}


def _device_name(device: str | None) -> str:
    return f"the device ({device})" if device else "the device"


def _busiest(sample: Sample) -> BusiestCpu | None:
    busiest = sample.get("cpu", {}).get("busiest")
    if busiest is None or number(busiest.get("busy")) is None or number(busiest.get("cpu")) is None:
        return None
    return busiest


def number(value: object) -> float | None:
    """A JSON value as a float, or None when it is not a number (a bool is not)."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _sum_or_none(*values: float | None) -> float | None:
    known = [value for value in values if value is not None]
    return sum(known) if len(known) == len(values) else None


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 2)
