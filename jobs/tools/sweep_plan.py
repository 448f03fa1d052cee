"""A sweep's plan: the axes it varies, the points they make and the time they take (pure: no Django).

A sweep varies one or two fields of a base profile (its Profile.parameters()). Each axis is typed as text:

- a list, in the order the points run: `1,2,4,16`, `4k,64k,1M`, `100,95,65,50,35,5,0`;
- a doubling (or tripling...) range, `FIRST-LAST xFACTOR`: `1-256 x2` is 1, 2, 4, ... 256 (`×` also reads);
- a stepped range, `FIRST-LAST +STEP`: `10-90 +20` is 10, 30, 50, 70, 90.

A range runs upwards and must land on LAST (`1-100 x2` is refused, with the two ends that would land). Block sizes
take the sizes the profile form takes, 1024-based as fio reads them (512, 4k, 64KiB, 1M); a read share may end
in %. An axis holds at least two values, none twice, at most MAX_VALUES.

The points are the grid of the axes, the first axis outer: `jobs 1,2 x iodepth 32,64` runs (1, 32), (1, 64),
(2, 32), (2, 64). Each point is the dict of the base fields it changes. The time is points x (ramp + runtime):
fio's ramp_time_s counts, ndisk64 has none.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from jobs.tools.bounds import MAX_BLOCK_SIZE
from jobs.tools.fio_common import MIXED_MODES
from jobs.tools.options import MAX_IODEPTH, MAX_JOBS, MIN_BLOCK_SIZE, SECTOR
from jobs.units import format_duration, parse_size, short_size

MAX_AXES = 2
MAX_VALUES = 128

_RANGE = re.compile(r"(?P<first>[^-]+)-(?P<last>[^-x×+]+)(?P<how>[x×+])(?P<step>.+)")
# Twelve digits at most: Python refuses to read an integer of thousands, and no bound here needs more.
_WHOLE = re.compile(r"[0-9]{1,12}")


@dataclass(frozen=True)
class _Kind:
    """What one axis is: the field it sets, its name for each tool, its bounds and what a value of it is."""

    field: str
    fio: str
    ndisk64: str
    low: int
    high: int
    what: str
    size: bool = False

    def name(self, tool: str) -> str:
        return self.ndisk64 if tool == "ndisk64" else self.fio


KINDS = {
    kind.field: kind
    for kind in (
        _Kind("iodepth", "iodepth", "iodepth", 1, MAX_IODEPTH, "a queue depth"),
        _Kind("jobs", "numjobs", "processes (-M)", 1, MAX_JOBS, "a number of jobs"),
        _Kind(
            "block_size_bytes", "block size", "block size (-b)", MIN_BLOCK_SIZE, MAX_BLOCK_SIZE, "a block size", True
        ),
        _Kind("read_percent", "read share", "read share (-r)", 0, 100, "a read share in percent"),
    )
}


# A latency-target search's points set fio's rate cap (total IOPS), which no sweep varies; named as fio names it.
RATE_FIELD = "rate_iops"


class SweepError(ValueError):
    """A sweep that cannot be planned; `field` names the axis (a profile field) to fix, None the whole sweep."""

    def __init__(self, field: str | None, message: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class Axis:
    field: str
    values: tuple[int, ...]


@dataclass(frozen=True)
class Plan:
    """The axes in order (the first outer), and the seconds each point takes: its ramp and its runtime."""

    axes: tuple[Axis, ...]
    ramp_s: int
    runtime_s: int

    @property
    def points(self) -> list[dict[str, int]]:
        fields = [axis.field for axis in self.axes]
        return [dict(zip(fields, values, strict=True)) for values in itertools.product(*(a.values for a in self.axes))]

    @property
    def count(self) -> int:
        return math.prod(len(axis.values) for axis in self.axes)

    @property
    def seconds_per_point(self) -> int:
        return self.ramp_s + self.runtime_s

    @property
    def total_s(self) -> int:
        return self.count * self.seconds_per_point


def parse_axis(field: str, text: str, tool: str = "fio") -> tuple[int, ...]:
    """The values an axis's text names (the module's docstring gives the syntax); SweepError names the axis."""
    kind = _kind(field)
    name = kind.name(tool)
    text = text.strip()
    if not text:
        raise SweepError(
            field, f"{name}: give a list such as {_example(kind)} or a range such as {_range_example(kind)}"
        )
    ranged = _RANGE.fullmatch(re.sub(r"\s+", "", text))
    values = _range(kind, name, ranged) if ranged and "," not in text else _list(kind, name, text)
    if len(values) < 2:
        one = short_size(values[0]) if kind.size else values[0]
        raise SweepError(
            field, f"{name}: a sweep axis holds at least two values, not one; set {one} on the base profile instead"
        )
    return values


def format_axis(field: str, values: tuple[int, ...]) -> str:
    """The shortest text parse_axis reads back as the same values: a range where the values make one, else a list."""
    kind = _kind(field)
    show = short_size if kind.size else str
    if len(values) >= 3:
        factor, remainder = divmod(values[1], values[0]) if values[0] else (0, 1)
        if not remainder and factor >= 2 and all(b == a * factor for a, b in itertools.pairwise(values)):
            return f"{show(values[0])}-{show(values[-1])} x{factor}"
        step = values[1] - values[0]
        if step > 0 and all(b - a == step for a, b in itertools.pairwise(values)):
            return f"{show(values[0])}-{show(values[-1])} +{show(step)}"
    return ",".join(show(value) for value in values)


def make_plan(base: Mapping[str, Any], axes: Mapping[str, str], *, logical_block_bytes: int | None = None) -> Plan:
    """The plan of a sweep of `base` (Profile.parameters()) over `axes` (field -> text, in order: the first outer).

    logical_block_bytes is the target device's logical block size where it is known: with direct I/O a block size
    that is not whole logical blocks fails (a 4Kn device refuses 512-byte I/O), so such a point is refused here.
    """
    tool = str(base.get("tool", "fio"))
    if not axes:
        raise SweepError(None, "A sweep varies one or two of iodepth, jobs, block size and read share; give an axis.")
    if len(axes) > MAX_AXES:
        raise SweepError(
            None, f"A sweep varies at most {MAX_AXES} axes, not {len(axes)}: set the others on the base profile."
        )
    parsed = tuple(Axis(field, parse_axis(field, text, tool)) for field, text in axes.items())
    for axis in parsed:
        _check_fits(base, tool, axis, logical_block_bytes)
    return Plan(parsed, _ramp_s(base, tool), _whole(base, "runtime_s", 1))


def check_bound(plan: Plan, bound_s: int) -> None:
    """Refuse a plan that takes longer than the team's bound, with the time, the bound and how to fit."""
    if plan.total_s <= bound_s:
        return
    fewer = bound_s // plan.seconds_per_point
    shorter = bound_s // plan.count - plan.ramp_s
    ways = []
    if fewer >= 2:
        ways.append(f"at most {fewer} points")
    if shorter >= 1:
        ways.append(f"a runtime of at most {format_duration(shorter)} a point")
    fit = f"it fits with {' or with '.join(ways)}" if ways else "not even two points of 1 s fit; ask for a longer bound"
    raise SweepError(
        None,
        f"This sweep takes {format_duration(plan.total_s)} ({_points_each(plan)}), longer than the team's bound of "
        f"{format_duration(bound_s)}: {fit}.",
    )


def plan_text(plan: Plan) -> str:
    """'9 points × 1 min = 9 min', with the ramp where there is one: '12 points × (5 s ramp + 1 min) = 13 min'."""
    return f"{_points_each(plan)} = {format_duration(plan.total_s)}"


def point_text(point: Mapping[str, int], tool: str = "fio") -> str:
    """A point as a person reads it, its fields by their tool's names: 'iodepth 16, block size 64k'."""
    parts = []
    for field, value in point.items():
        if field == RATE_FIELD:
            parts.append(f"{RATE_FIELD} {value}")
            continue
        kind = _kind(field)
        shown = short_size(value) if kind.size else f"{value} %" if field == "read_percent" else str(value)
        parts.append(f"{kind.name(tool)} {shown}")
    return ", ".join(parts)


def _points_each(plan: Plan) -> str:
    each = format_duration(plan.runtime_s)
    if plan.ramp_s:
        each = f"({format_duration(plan.ramp_s)} ramp + {each})"
    return f"{'1 point' if plan.count == 1 else f'{plan.count} points'} × {each}"


def _kind(field: str) -> _Kind:
    kind = KINDS.get(field)
    if kind is None:
        raise SweepError(field, f"{field}: a sweep varies {', '.join(KINDS)}; not {field!r}.")
    return kind


def _value(kind: _Kind, name: str, text: str) -> int:
    text = text.strip()
    if kind.size:
        try:
            value = parse_size(text)
        except ValueError:
            value = -1
    else:
        digits = text.removesuffix("%").rstrip() if kind.field == "read_percent" else text
        value = int(digits) if _WHOLE.fullmatch(digits) else -1
    if not kind.low <= value <= kind.high:
        raise SweepError(kind.field, f"{name}: {text!r} is not {kind.what} a profile can run ({_bounds(kind)})")
    return value


def _list(kind: _Kind, name: str, text: str) -> tuple[int, ...]:
    items = [item.strip() for item in text.split(",")]
    if "" in items:
        raise SweepError(kind.field, f"{name}: {text!r} has an empty entry; give values such as {_example(kind)}")
    if len(items) == 1 and "-" in text:
        raise SweepError(
            kind.field, f"{name}: {text!r} is a range without its step; give one, such as {_range_example(kind)}"
        )
    if len(items) > MAX_VALUES:
        raise SweepError(kind.field, f"{name}: {len(items)} values; an axis holds at most {MAX_VALUES}")
    values = tuple(_value(kind, name, item) for item in items)
    for index, value in enumerate(values):
        if value in values[:index]:
            raise SweepError(kind.field, f"{name}: {items[index]!r} is there twice; each value runs once")
    return values


def _range(kind: _Kind, name: str, match: re.Match[str]) -> tuple[int, ...]:
    first, last = _value(kind, name, match["first"]), _value(kind, name, match["last"])
    written = f"{match['first']}-{match['last']} {match['how']}{match['step']}"
    if not first < last:
        raise SweepError(kind.field, f"{name}: {written!r} must run upwards; write it {match['last']}-{match['first']}")
    step = _step(kind, name, match["step"], size=kind.size and match["how"] == "+")
    if match["how"] == "+":
        values = tuple(range(first, last + 1, step)[: MAX_VALUES + 1])
        beyond = values[-1] + step
    else:
        if step < 2 or first == 0:
            raise SweepError(
                kind.field, f"{name}: {written!r} never grows; start at 1 or more and multiply by 2 or more"
            )
        values = tuple(itertools.takewhile(lambda v: v <= last, (first * step**n for n in range(MAX_VALUES + 1))))
        beyond = values[-1] * step
    if len(values) > MAX_VALUES:
        raise SweepError(kind.field, f"{name}: {written!r} makes more than {MAX_VALUES} values; take a larger step")
    if values[-1] != last:
        show = short_size if kind.size else str
        ends = f"{show(values[-1])} or {show(beyond)}" if beyond <= kind.high else show(values[-1])
        raise SweepError(kind.field, f"{name}: {written!r} does not land on {match['last']}; end it at {ends}")
    return values


def _step(kind: _Kind, name: str, text: str, *, size: bool) -> int:
    try:
        step = parse_size(text) if size else int(text) if _WHOLE.fullmatch(text) else 0
    except ValueError:
        step = 0
    if step < 1:
        raise SweepError(kind.field, f"{name}: {text!r} is not a step; give a whole number of 1 or more")
    return step


def _check_fits(base: Mapping[str, Any], tool: str, axis: Axis, logical_block_bytes: int | None) -> None:
    """Refuse an axis that no point of this base could run, before anything is written."""
    kind = KINDS[axis.field]
    name = kind.name(tool)
    if axis.field == "iodepth" and tool == "ndisk64":
        raise SweepError(axis.field, "iodepth: ndisk64 has no queue depth; vary its processes (-M) instead")
    if axis.field == "read_percent" and tool == "fio" and base.get("rw") not in MIXED_MODES:
        raise SweepError(
            axis.field,
            f"{name}: rw={base.get('rw')} does not mix reads and writes, so fio takes no read share; "
            "set the base profile's rw to randrw or rw",
        )
    if not kind.size:
        return
    size = base.get("size_bytes")
    direct = bool(base.get("direct"))
    for value in axis.values:
        if size and value > size:
            raise SweepError(
                axis.field,
                f"{name}: {short_size(value)} is larger than the base profile's file per job ({short_size(size)}); "
                f"drop it from the axis or give the base a file of at least {short_size(value)}",
            )
        if direct and tool == "fio" and value % SECTOR:
            raise SweepError(
                axis.field,
                f"{name}: {short_size(value)} is not whole 512-byte sectors, and direct I/O needs them; "
                "drop it from the axis or turn direct I/O off",
            )
        if direct and logical_block_bytes and value % logical_block_bytes:
            raise SweepError(
                axis.field,
                f"{name}: {short_size(value)} is not whole {short_size(logical_block_bytes)} logical blocks of this "
                f"device, and direct I/O there fails (Invalid argument); drop {short_size(value)} from the axis",
            )


def _ramp_s(base: Mapping[str, Any], tool: str) -> int:
    return 0 if tool == "ndisk64" else _whole(base, "ramp_time_s", 0, default=0)


def _whole(base: Mapping[str, Any], field: str, low: int, default: int | None = None) -> int:
    value = base.get(field, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise SweepError(
            field, f"{field}: the base profile's {field} is a whole number of {low} or more, not {value!r}"
        )
    return value


def _bounds(kind: _Kind) -> str:
    if kind.size:
        return f"at least {kind.low} bytes and below {short_size(kind.high + 1)}, e.g. 4k or 64k"
    return f"{kind.low} to {kind.high}"


def _example(kind: _Kind) -> str:
    return {"block_size_bytes": "4k,64k,1M", "read_percent": "100,70,50,0"}.get(kind.field, "1,2,4,16")


def _range_example(kind: _Kind) -> str:
    return {"block_size_bytes": "4k-1M x2", "read_percent": "0-100 +25"}.get(kind.field, "1-256 x2")
