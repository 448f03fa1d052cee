"""Disk-spec catalog evaluation: a disk's published limits for its size, stripe set, instance and block size.

Pure: no Django import (the `disk_limits` command and the models are the edges). The figures live in
`disk_catalog.yaml` beside this module, one record per (type, effective period), each with its source.

Evaluation (docs/architecture.md, "Disk limits"):
1. pick the type's record in effect on the given date;
2. compute one volume's baseline and burst limits (formula, tier table or provisioned values);
3. multiply by the stripe count;
4. take the minimum with the instance caps;
5. at a block size, find which limit binds: IOPS, or throughput / block size.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from functools import cache
from pathlib import Path
from typing import Any

import yaml

CATALOG_PATH = Path(__file__).with_name("disk_catalog.yaml")

# Bytes per second in one unit, as each source writes it: MB is 10^6 and MiB is 2^20.
THROUGHPUT_UNITS: dict[str, int] = {
    "B/s": 1,
    "KB/s": 10**3,
    "KiB/s": 2**10,
    "MB/s": 10**6,
    "MiB/s": 2**20,
    "GB/s": 10**9,
}

USER_FIELDS = ("iops", "bytes_per_s", "burst_iops", "burst_bytes_per_s")


class SpecError(ValueError):
    """A spec the catalog cannot evaluate; `field` names the Spec field at fault."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class Spec:
    disk_type: str
    size: float | None = None
    stripes: int = 1
    # Provisioned values for provisioned types; the limits themselves for `custom`.
    iops: float | None = None
    bytes_per_s: float | None = None
    burst_iops: float | None = None
    burst_bytes_per_s: float | None = None
    instance_iops_cap: float | None = None
    instance_bytes_per_s_cap: float | None = None


@dataclass(frozen=True)
class Limits:
    iops: float | None
    throughput_bytes_per_s: float | None
    burst_iops: float | None = None
    burst_throughput_bytes_per_s: float | None = None
    binding: str | None = None
    block_size_bytes: int | None = None
    effective_iops: float | None = None
    effective_throughput_bytes_per_s: float | None = None
    record_id: str = ""
    source: dict[str, Any] = field(default_factory=dict)
    notes: str = ""
    disk_type: str = ""
    size: float | None = None
    size_unit: str | None = None
    stripes: int = 1
    # Only where a vendor publishes a higher write figure (pd-standard); `iops` is then the lower read figure.
    write_iops: float | None = None
    tier: str | None = None
    burst_kind: str | None = None
    # How long a full credit bucket lasts at the volume's own burst rate; None for no limit or none published.
    burst_seconds: float | None = None
    effective_burst_iops: float | None = None
    effective_burst_throughput_bytes_per_s: float | None = None
    capped_by_instance: tuple[str, ...] = ()
    throughput_unit: str = "MB/s"
    io_basis: str | None = None
    effective_from: date | None = None
    effective_until: date | None = None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            if isinstance(value, date):
                value = value.isoformat()
            elif isinstance(value, tuple):
                value = list(value)
            elif isinstance(value, dict):
                value = dict(value)
            out[name] = value
        return out


@dataclass(frozen=True)
class CatalogRecord:
    id: str
    effective_from: date | None
    effective_until: date | None
    size_unit: str | None
    size_min: float | None
    size_max: float | None
    source_url: str
    source_date: str
    verified: bool
    notes: str
    io_basis: str | None = None

    @property
    def source(self) -> dict[str, Any]:
        return {"url": self.source_url, "date": self.source_date, "verified": self.verified}


@dataclass(frozen=True)
class DiskType:
    id: str
    label: str
    provider: str
    size_unit: str | None
    size_min: float | None
    size_max: float | None
    # Spec fields beyond size/stripes/instance caps that the type takes: field -> "required" | "optional".
    inputs: dict[str, str] = field(default_factory=dict)
    records: list[CatalogRecord] = field(default_factory=list)
    size_required: bool = True


# ----------------------------------------------------------------------------- vendor rules that are piecewise


def gp2_throughput(size: float, iops: float | None) -> float:
    """gp2 baseline throughput cap in MiB/s, with an empty credit bucket."""
    if size <= 170:
        return 128.0
    if size < 334:
        # Between 170 and 334 GiB the 250 MiB/s needs credits; without them it is baseline IOPS x 256 KiB.
        return min((iops or 0.0) * 0.25, 250.0)
    return 250.0


def gp2_burst_throughput(size: float, iops: float | None) -> float:
    """gp2 throughput cap in MiB/s while credits last."""
    return 128.0 if size <= 170 else 250.0


def io1_throughput(size: float, iops: float | None) -> float:
    """io1 throughput in MiB/s for the provisioned IOPS."""
    provisioned = iops or 0.0
    if provisioned <= 32000:
        return min(provisioned * 0.25, 500.0)  # 256 KiB per I/O
    return provisioned / 64  # 16 KiB per I/O: 1,000 MiB/s at 64,000


FUNCTIONS: dict[str, Callable[[float, float | None], float]] = {
    "gp2_throughput": gp2_throughput,
    "gp2_burst_throughput": gp2_burst_throughput,
    "io1_throughput": io1_throughput,
}


# ----------------------------------------------------------------------------- catalog structures


@dataclass(frozen=True)
class _Formula:
    model: str
    unit: str | None = None
    base: float = 0.0
    per_size: float = 0.0
    per_iops: float = 0.0
    floor: float | None = None
    cap: float | None = None
    function: str | None = None

    def value(self, size: float, iops: float | None) -> float:
        """The limit for one volume: IOPS, or bytes per second when the formula has a throughput unit."""
        if self.function is not None:
            raw = FUNCTIONS[self.function](size, iops)
        else:
            raw = self.base + self.per_size * size + self.per_iops * (iops or 0.0)
        if self.floor is not None:
            raw = max(raw, self.floor)
        if self.cap is not None:
            raw = min(raw, self.cap)
        return raw * THROUGHPUT_UNITS[self.unit] if self.unit else raw


@dataclass(frozen=True)
class _Bound:
    field: str
    unit: str | None = None
    min: float = 0.0
    max: float | None = None
    max_per_size: float | None = None
    max_per_iops: float | None = None
    max_total_per_size: float | None = None
    min_size: float | None = None
    default: float | None = None
    required: bool = False
    at_least_base: bool = False


@dataclass(frozen=True)
class _Provisioned:
    mode: str
    bounds: Mapping[str, _Bound]
    adds_throughput: _Formula | None = None


@dataclass(frozen=True)
class _Burst:
    kind: str
    iops: _Formula | None = None
    throughput: _Formula | None = None
    seconds: float | None = None
    bucket_metric: str | None = None
    bucket_size: float | None = None  # I/Os for metric iops, bytes per size unit for metric throughput


@dataclass(frozen=True)
class _Tier:
    name: str
    max_size: float
    iops: float
    throughput: float
    burst: _Burst | None


@dataclass(frozen=True)
class _Record:
    id: str
    effective_from: date | None
    effective_until: date | None
    size_unit: str | None
    size_min: float | None
    size_max: float | None
    source: Mapping[str, Any]
    notes: str
    io_basis: str | None
    iops: _Formula | None = None
    write_iops: _Formula | None = None
    throughput: _Formula | None = None
    tiers: tuple[_Tier, ...] = ()
    tier_unit: str | None = None
    provisioned: _Provisioned | None = None
    burst: _Burst | None = None

    def in_effect(self, on: date) -> bool:
        starts_ok = self.effective_from is None or self.effective_from <= on
        return starts_ok and (self.effective_until is None or on < self.effective_until)

    @property
    def throughput_unit(self) -> str:
        if self.tier_unit:
            return self.tier_unit
        if self.throughput is not None and self.throughput.unit:
            return self.throughput.unit
        if self.provisioned is not None and "bytes_per_s" in self.provisioned.bounds:
            unit = self.provisioned.bounds["bytes_per_s"].unit
            return unit if unit and unit != "B/s" else "MB/s"
        return "MB/s"


@dataclass(frozen=True)
class _Type:
    id: str
    label: str
    provider: str
    records: tuple[_Record, ...]


# ----------------------------------------------------------------------------- loading


def _keys(where: str, body: Mapping[str, Any], allowed: set[str]) -> None:
    unknown = set(body) - allowed
    if unknown:
        raise ValueError(f"{CATALOG_PATH.name}: {where} has unknown keys {sorted(unknown)}")


def _formula(where: str, body: Mapping[str, Any] | None, *, throughput: bool) -> _Formula | None:
    if body is None:
        return None
    _keys(where, body, {"model", "unit", "base", "per_size", "per_iops", "floor", "cap", "name"})
    model = body["model"]
    if model not in {"linear", "function"}:
        raise ValueError(f"{CATALOG_PATH.name}: {where} has unknown model {model!r}")
    if model == "function" and body.get("name") not in FUNCTIONS:
        raise ValueError(f"{CATALOG_PATH.name}: {where} names no known function")
    unit = body.get("unit")
    if throughput and unit not in THROUGHPUT_UNITS:
        raise ValueError(f"{CATALOG_PATH.name}: {where} needs a throughput unit, one of {sorted(THROUGHPUT_UNITS)}")
    return _Formula(
        model=model,
        unit=unit,
        base=float(body.get("base", 0)),
        per_size=float(body.get("per_size", 0)),
        per_iops=float(body.get("per_iops", 0)),
        floor=body.get("floor"),
        cap=body.get("cap"),
        function=body.get("name") if model == "function" else None,
    )


def _burst(where: str, body: Mapping[str, Any] | None) -> _Burst | None:
    if body is None:
        return None
    _keys(where, body, {"kind", "iops", "throughput", "seconds", "token_bucket"})
    bucket = body.get("token_bucket") or {}
    _keys(f"{where}.token_bucket", bucket, {"metric", "size", "bytes_per_size"})
    return _Burst(
        kind=body["kind"],
        iops=_formula(f"{where}.iops", body.get("iops"), throughput=False),
        throughput=_formula(f"{where}.throughput", body.get("throughput"), throughput=True),
        seconds=body.get("seconds"),
        bucket_metric=bucket.get("metric"),
        bucket_size=bucket.get("size", bucket.get("bytes_per_size")),
    )


def _tiers(where: str, body: Mapping[str, Any]) -> tuple[str, tuple[_Tier, ...]]:
    _keys(where, body, {"unit", "bursts", "rows"})
    unit = body["unit"]
    bursts = {}
    for name, burst in body.get("bursts", {}).items():
        _keys(f"{where}.bursts.{name}", burst, {"kind", "iops", "throughput", "seconds"})
        bursts[name] = _Burst(
            kind=burst["kind"],
            iops=_Formula(model="linear", base=float(burst["iops"])),
            throughput=_Formula(model="linear", unit=unit, base=float(burst["throughput"])),
            seconds=burst.get("seconds"),
        )
    rows = tuple(
        _Tier(
            name=row["name"],
            max_size=float(row["max_size"]),
            iops=float(row["iops"]),
            throughput=float(row["throughput"]),
            burst=bursts[row["burst"]] if row.get("burst") else None,
        )
        for row in body["rows"]
    )
    if [row.max_size for row in rows] != sorted(row.max_size for row in rows):
        raise ValueError(f"{CATALOG_PATH.name}: {where} rows must be in increasing size")
    return unit, rows


def _provisioned(where: str, body: Mapping[str, Any] | None) -> _Provisioned | None:
    if body is None:
        return None
    _keys(where, body, {"mode", *USER_FIELDS, "adds_throughput"})
    if body["mode"] not in {"set", "add"}:
        raise ValueError(f"{CATALOG_PATH.name}: {where} mode must be set or add")
    bounds = {}
    for name in USER_FIELDS:
        if name in body:
            spec = body[name]
            _keys(f"{where}.{name}", spec, {f for f in _Bound.__dataclass_fields__ if f != "field"})
            bounds[name] = _Bound(field=name, **spec)
    adds = _formula(f"{where}.adds_throughput", body.get("adds_throughput"), throughput=True)
    return _Provisioned(mode=body["mode"], bounds=bounds, adds_throughput=adds)


def _record(type_id: str, body: Mapping[str, Any]) -> _Record:
    where = f"{type_id}/{body.get('id')}"
    _keys(
        where,
        body,
        {
            "id", "effective_from", "effective_until", "size", "iops", "write_iops", "throughput", "tiers",
            "provisioned", "burst", "io_basis", "source", "notes",
        },
    )  # fmt: skip
    size = body["size"]
    if size is not None:
        _keys(f"{where}.size", size, {"unit", "min", "max"})
    tier_unit, tiers = _tiers(f"{where}.tiers", body["tiers"]) if body.get("tiers") else (None, ())
    source = body["source"]
    _keys(f"{where}.source", source, {"url", "date", "verified", "refs"})
    return _Record(
        id=body["id"],
        effective_from=body.get("effective_from"),
        effective_until=body.get("effective_until"),
        size_unit=size["unit"] if size else None,
        size_min=size.get("min") if size else None,
        size_max=size.get("max") if size else None,
        # YAML reads an ISO date as a date; a source date is text as the source states it.
        source={
            "url": source["url"],
            "date": str(source["date"]),
            "verified": bool(source["verified"]),
            "refs": source.get("refs", ""),
        },
        notes=" ".join(str(body.get("notes", "")).split()),
        io_basis=body.get("io_basis"),
        iops=_formula(f"{where}.iops", body.get("iops"), throughput=False),
        write_iops=_formula(f"{where}.write_iops", body.get("write_iops"), throughput=False),
        throughput=_formula(f"{where}.throughput", body.get("throughput"), throughput=True),
        tiers=tiers,
        tier_unit=tier_unit,
        provisioned=_provisioned(f"{where}.provisioned", body.get("provisioned")),
        burst=_burst(f"{where}.burst", body.get("burst")),
    )


@cache
def _catalog() -> dict[str, _Type]:
    raw = yaml.safe_load(CATALOG_PATH.read_text(encoding="utf-8"))
    types = {}
    for type_id, body in raw["types"].items():
        _keys(type_id, body, {"label", "provider", "records"})
        records = tuple(_record(type_id, record) for record in body["records"])
        types[type_id] = _Type(id=type_id, label=body["label"], provider=body["provider"], records=records)
    return types


# ----------------------------------------------------------------------------- helpers


def _num(value: float | None) -> str:
    if value is None:
        return "none"
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.3f}".rstrip("0").rstrip(".")


def _clean(value: float | None) -> float | None:
    """Drop float noise (0.15 x 266 MB/s) so limits compare digit by digit with a vendor's table."""
    if value is None:
        return None
    rounded = round(float(value), 3)
    return int(rounded) if rounded.is_integer() else rounded


def _as_date(on: date | None) -> date:
    if on is None:
        return date.today()
    return on.date() if isinstance(on, datetime) else on


def _type(type_id: str) -> _Type:
    catalog = _catalog()
    if type_id not in catalog:
        raise SpecError("disk_type", f"Unknown disk type {type_id!r}. Valid types: {', '.join(sorted(catalog))}.")
    return catalog[type_id]


def _record_on(kind: _Type, on: date) -> _Record:
    for record in kind.records:
        if record.in_effect(on):
            return record
    # Only a catalog with a gap in its dates gets here; the test suite checks there is none.
    raise SpecError("disk_type", f"The catalog has no {kind.id} record in effect on {on.isoformat()}.")


def _positive(name: str, value: float | None, what: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
        raise SpecError(name, f"{name} must be a positive number of {what}; got {value!r}.")
    return float(value)


def _range_text(low: float | None, high: float | None, unit: str | None) -> str:
    if low is None and high is None:
        return f"any positive size in {unit} (no range is published)"
    if high is None:
        return f"at least {_num(low)} {unit}"
    if low is None:
        return f"up to {_num(high)} {unit}"
    return f"{_num(low)} to {_num(high)} {unit}"


def _check_size(kind: _Type, record: _Record, size: float | None, on: date) -> float:
    if record.size_unit is None:
        return float(size) if isinstance(size, int | float) and not isinstance(size, bool) else 0.0
    valid = _range_text(record.size_min, record.size_max, record.size_unit)
    if size is None:
        raise SpecError("size", f"{kind.id} needs a size in {record.size_unit}: {valid}.")
    checked = _positive("size", size, record.size_unit)
    assert checked is not None
    low_ok = record.size_min is None or checked >= record.size_min
    high_ok = record.size_max is None or checked <= record.size_max
    if not (low_ok and high_ok):
        when = f" on {on.isoformat()}" if len(kind.records) > 1 else ""
        raise SpecError(
            "size",
            f"Size {_num(checked)} {record.size_unit} is outside the published range for {kind.id}{when}: {valid}.",
        )
    return checked


def _check_stripes(stripes: int) -> int:
    if isinstance(stripes, bool) or not isinstance(stripes, int) or stripes < 1:
        raise SpecError("stripes", f"stripes must be a whole number of volumes, 1 or more; got {stripes!r}.")
    return stripes


def _reject_unused(kind: _Type, record: _Record, spec: Spec) -> None:
    taken = record.provisioned.bounds if record.provisioned else {}
    for name in USER_FIELDS:
        if getattr(spec, name) is not None and name not in taken:
            takes = ", ".join(taken) if taken else "only a size"
            raise SpecError(
                name,
                f"{kind.id} does not take {name}: its limits follow from the published figures "
                f"(it takes {takes}). Leave {name} empty.",
            )


def _unit_value(bound: _Bound, value: float) -> float:
    """A user value (IOPS, or bytes per second) in the bound's unit."""
    return value / THROUGHPUT_UNITS[bound.unit] if bound.unit else value


def _unit_label(bound: _Bound) -> str:
    if bound.unit == "B/s":
        return "bytes/s"
    return bound.unit or "IOPS"


def _valid_text(bound: _Bound, low: float, high: float) -> str:
    """'3,000 to 4,000 IOPS', or '125 to 750 MiB/s (131,072,000 to 786,432,000 bytes/s)'."""
    label = _unit_label(bound)

    def span(factor: float) -> str:
        if not math.isfinite(high):
            return f"at least {_num(low * factor)}"
        return f"{_num(low * factor)} to {_num(high * factor)}"

    if bound.unit and bound.unit != "B/s":
        return f"{span(1)} {label}, i.e. {span(THROUGHPUT_UNITS[bound.unit])} bytes/s"
    return f"{span(1)} {label}"


def _allowed_max(
    bound: _Bound, size: float, size_unit: str | None, iops: float | None, baseline: float | None
) -> tuple[float, str]:
    """The highest value allowed for this size and IOPS, and the rules behind it (for the error message)."""
    high, why = (bound.max if bound.max is not None else math.inf), []
    label = _unit_label(bound)
    if bound.max_per_size is not None:
        high = min(high, max(bound.min, bound.max_per_size * size))
        why.append(f"up to {_num(bound.max_per_size)} {label} per {size_unit}")
    if bound.max_per_iops is not None and iops is not None:
        high = min(high, max(bound.min, bound.max_per_iops * iops))
        why.append(f"up to {_num(bound.max_per_iops)} {label} per provisioned IOPS")
    if bound.max_total_per_size is not None:
        high = min(high, bound.max_total_per_size * size - (baseline or 0.0))
        why.append(f"baseline plus provisioned up to {_num(bound.max_total_per_size)} IOPS per {size_unit}")
    if bound.max is not None:
        why.append(f"at most {_num(bound.max)} {label}")
    return high, "; ".join(why)


def _user_value(
    kind: _Type, record: _Record, bound: _Bound, given: float | None, context: dict[str, float | None], size: float
) -> float | None:
    """A validated user value in IOPS or bytes/s, else the default, else None where the user may leave it empty."""
    where = f" at {_num(size)} {record.size_unit}" if record.size_unit else ""
    iops = context.get("iops")
    if bound.max_per_iops is not None and iops is not None:
        where += f" with {_num(iops)} IOPS"
    base_field = bound.field.removeprefix("burst_")
    base = context.get(base_field) if bound.at_least_base else None
    high, why = _allowed_max(bound, size, record.size_unit, iops, context.get("baseline_iops"))
    low = max(bound.min, _unit_value(bound, base)) if base is not None else bound.min
    if given is None:
        if bound.required:
            raise SpecError(bound.field, f"{kind.id}{where} needs {bound.field}: give {_valid_text(bound, low, high)}.")
        if bound.default is None:
            return None
        return bound.default * THROUGHPUT_UNITS[bound.unit] if bound.unit else float(bound.default)
    value = _positive(bound.field, given, "bytes per second" if bound.unit else "IOPS")
    assert value is not None
    if (bound.min_size is not None and size < bound.min_size) or high < low:
        needs = f" (it needs a size of at least {_num(bound.min_size)} {record.size_unit})" if bound.min_size else ""
        raise SpecError(bound.field, f"{kind.id}{where} allows no provisioned {bound.field}{needs}; leave it empty.")
    in_unit = _unit_value(bound, value)
    # A relative tolerance, so bytes/s typed from MiB/s figures are not refused for float noise.
    if not low * (1 - 1e-12) <= in_unit <= high * (1 + 1e-12):
        rules = [why] if why else []
        if base is not None:
            rules.append(f"not below {base_field}")
        reason = f" ({'; '.join(rules)})" if rules else ""
        raise SpecError(
            bound.field,
            f"{bound.field} for {kind.id}{where} must be {_valid_text(bound, low, high)}{reason}; "
            f"got {_num(in_unit)} {_unit_label(bound)}.",
        )
    return value


def _bucket_seconds(burst: _Burst, size: float, base: _Volume, peak: _Volume) -> float | None:
    if burst.seconds is not None:
        return float(burst.seconds)
    if burst.bucket_metric == "iops" and peak.iops is not None and base.iops is not None and peak.iops > base.iops:
        return burst.bucket_size / (peak.iops - base.iops)
    if (
        burst.bucket_metric == "throughput"
        and peak.bytes_per_s is not None
        and base.bytes_per_s is not None
        and peak.bytes_per_s > base.bytes_per_s
    ):
        return burst.bucket_size * size / (peak.bytes_per_s - base.bytes_per_s)
    return None


@dataclass(frozen=True)
class _Volume:
    iops: float | None = None
    bytes_per_s: float | None = None


@dataclass(frozen=True)
class _VolumeLimits:
    base: _Volume
    peak: _Volume  # burst values; None where the metric has no burst figure
    write_iops: float | None = None
    tier: str | None = None
    burst_kind: str | None = None
    burst_seconds: float | None = None


def _volume_limits(kind: _Type, record: _Record, spec: Spec, size: float) -> _VolumeLimits:
    _reject_unused(kind, record, spec)
    if record.tiers:
        tier = next(row for row in record.tiers if size <= row.max_size)
        base = _Volume(tier.iops, tier.throughput * THROUGHPUT_UNITS[record.tier_unit or "MB/s"])
        return _with_burst(tier.burst, size, base, _Volume(), None, tier.name)

    formula_iops = record.iops.value(size, None) if record.iops else None
    provisioned = record.provisioned
    bounds = provisioned.bounds if provisioned else {}
    context: dict[str, float | None] = {"baseline_iops": formula_iops}
    values: dict[str, float | None] = {}
    # Order matters: throughput bounds scale with the IOPS, burst values may not fall below their base.
    for name in USER_FIELDS:
        if name in bounds:
            values[name] = _user_value(kind, record, bounds[name], getattr(spec, name), context, size)
            context[name] = values[name]

    adding = provisioned is not None and provisioned.mode == "add"
    if provisioned is not None and not adding:
        iops = values.get("iops")
    else:
        iops = formula_iops
        if adding and values.get("iops"):
            iops = (iops or 0.0) + values["iops"]
    bytes_per_s = values.get("bytes_per_s")
    if bytes_per_s is None and record.throughput is not None:
        bytes_per_s = record.throughput.value(size, formula_iops if adding else iops)
    if adding and values.get("iops") and provisioned and provisioned.adds_throughput:
        bytes_per_s = (bytes_per_s or 0.0) + provisioned.adds_throughput.value(size, values["iops"])

    base = _Volume(iops, bytes_per_s)
    typed = _Volume(values.get("burst_iops"), values.get("burst_bytes_per_s"))
    write_iops = record.write_iops.value(size, None) if record.write_iops else None
    return _with_burst(record.burst, size, base, typed, write_iops, None)


def _with_burst(
    burst: _Burst | None, size: float, base: _Volume, typed: _Volume, write_iops: float | None, tier: str | None
) -> _VolumeLimits:
    if burst is None:
        return _VolumeLimits(base=base, peak=_Volume(), write_iops=write_iops, tier=tier)
    peak_iops = typed.iops
    if peak_iops is None and burst.iops is not None:
        peak_iops = burst.iops.value(size, base.iops)
    peak_bytes = typed.bytes_per_s
    if peak_bytes is None and burst.throughput is not None:
        peak_bytes = burst.throughput.value(size, peak_iops if peak_iops is not None else base.iops)
    peak = _Volume(peak_iops, peak_bytes)
    return _VolumeLimits(
        base=base,
        peak=peak,
        write_iops=write_iops,
        tier=tier,
        burst_kind=burst.kind,
        burst_seconds=_bucket_seconds(burst, size, base, peak),
    )


def _total(value: float | None, stripes: int, cap: float | None) -> float | None:
    # An instance cap limits a metric even where the disk publishes no figure for it.
    if value is None:
        return cap
    return value * stripes if cap is None else min(value * stripes, cap)


def _above(burst: float | None, base: float | None) -> float | None:
    """A burst figure only where it exceeds the sustained one (gp2 at 1,000 GiB already runs at 3,000)."""
    if burst is None or (base is not None and burst <= base):
        return None
    return burst


def _at_block_size(iops: float | None, bytes_per_s: float | None, block_size: int) -> tuple[str | None, float | None]:
    """Which limit binds at this block size, and the IOPS achievable there."""
    by_throughput = bytes_per_s / block_size if bytes_per_s is not None else None
    if by_throughput is not None and (iops is None or by_throughput < iops):
        return "throughput", by_throughput
    if iops is not None:
        return "iops", iops
    return None, None


# ----------------------------------------------------------------------------- public API


def evaluate(spec: Spec, *, block_size: int | None = None, on: date | None = None) -> Limits:
    """The limits of a disk (or stripe set) as published on `on` (default today), at a block size if given."""
    if block_size is not None and (isinstance(block_size, bool) or not isinstance(block_size, int) or block_size < 1):
        raise ValueError(f"block_size must be a positive whole number of bytes; got {block_size!r}.")
    kind = _type(spec.disk_type)
    day = _as_date(on)
    record = _record_on(kind, day)
    stripes = _check_stripes(spec.stripes)
    iops_cap = _positive("instance_iops_cap", spec.instance_iops_cap, "IOPS")
    bytes_cap = _positive("instance_bytes_per_s_cap", spec.instance_bytes_per_s_cap, "bytes per second")
    size = _check_size(kind, record, spec.size, day)
    volume = _volume_limits(kind, record, spec, size)

    iops = _total(volume.base.iops, stripes, iops_cap)
    bytes_per_s = _total(volume.base.bytes_per_s, stripes, bytes_cap)
    write_iops = _total(volume.write_iops, stripes, iops_cap) if volume.write_iops is not None else None
    burst_iops = _above(_total(volume.peak.iops, stripes, iops_cap) if volume.peak.iops else None, iops)
    burst_bytes = _above(
        _total(volume.peak.bytes_per_s, stripes, bytes_cap) if volume.peak.bytes_per_s else None, bytes_per_s
    )
    bursting = burst_iops is not None or burst_bytes is not None

    capped = []
    if iops_cap is not None and volume.base.iops is not None and volume.base.iops * stripes > iops_cap:
        capped.append("iops")
    if bytes_cap is not None and volume.base.bytes_per_s is not None and volume.base.bytes_per_s * stripes > bytes_cap:
        capped.append("throughput")

    binding = effective_iops = burst_effective_iops = None
    if block_size is not None:
        binding, effective_iops = _at_block_size(iops, bytes_per_s, block_size)
        if bursting:
            _, burst_effective_iops = _at_block_size(burst_iops or iops, burst_bytes or bytes_per_s, block_size)

    notes = record.notes
    if record.io_basis:
        notes += f" I/O basis: {record.io_basis}."
    return Limits(
        iops=_clean(iops),
        throughput_bytes_per_s=_clean(bytes_per_s),
        burst_iops=_clean(burst_iops),
        burst_throughput_bytes_per_s=_clean(burst_bytes),
        binding=binding,
        block_size_bytes=block_size,
        effective_iops=_clean(effective_iops),
        effective_throughput_bytes_per_s=_clean(effective_iops * block_size if effective_iops and block_size else None),
        record_id=record.id,
        source=dict(record.source),
        notes=notes.strip(),
        disk_type=kind.id,
        size=_clean(size) if record.size_unit else None,
        size_unit=record.size_unit,
        stripes=stripes,
        write_iops=_clean(write_iops),
        tier=volume.tier,
        burst_kind=volume.burst_kind if bursting else None,
        burst_seconds=_clean(volume.burst_seconds) if bursting else None,
        effective_burst_iops=_clean(burst_effective_iops),
        effective_burst_throughput_bytes_per_s=_clean(
            burst_effective_iops * block_size if burst_effective_iops and block_size else None
        ),
        capped_by_instance=tuple(capped),
        throughput_unit=record.throughput_unit,
        io_basis=record.io_basis,
        effective_from=record.effective_from,
        effective_until=record.effective_until,
    )


def _inputs(record: _Record) -> dict[str, str]:
    if record.provisioned is None:
        return {}
    return {name: "required" if bound.required else "optional" for name, bound in record.provisioned.bounds.items()}


def disk_types(*, on: date | None = None) -> list[DiskType]:
    """Every catalog type, described by its record in effect on `on` (default today), with all its records."""
    day = _as_date(on)
    out = []
    for kind in _catalog().values():
        current = _record_on(kind, day)
        records = [
            CatalogRecord(
                id=record.id,
                effective_from=record.effective_from,
                effective_until=record.effective_until,
                size_unit=record.size_unit,
                size_min=record.size_min,
                size_max=record.size_max,
                source_url=record.source["url"],
                source_date=record.source["date"],
                verified=record.source["verified"],
                notes=record.notes,
                io_basis=record.io_basis,
            )
            for record in kind.records
        ]
        out.append(
            DiskType(
                id=kind.id,
                label=kind.label,
                provider=kind.provider,
                size_unit=current.size_unit,
                size_min=current.size_min,
                size_max=current.size_max,
                inputs=_inputs(current),
                records=records,
                size_required=current.size_unit is not None,
            )
        )
    return out
