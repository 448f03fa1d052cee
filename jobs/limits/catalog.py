"""The disk-spec catalog: `disk_catalog.yaml` beside this module read into records, checked as it loads (pure).

One record per (type, effective period), each with its source. A record gives a volume's limits by a
formula, a tier table or bounds on provisioned values; the vendor rules a linear formula cannot express
are the named functions below. jobs/limits/evaluation.py answers questions with these records.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date
from functools import cache
from pathlib import Path
from typing import Any

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
    # Metric throughput: the credit an I/O spends at least (st1/sc1: 1 MiB, whatever its size).
    bucket_min_io_bytes: int | None = None


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
    _keys(f"{where}.token_bucket", bucket, {"metric", "size", "bytes_per_size", "min_io_bytes"})
    return _Burst(
        kind=body["kind"],
        iops=_formula(f"{where}.iops", body.get("iops"), throughput=False),
        throughput=_formula(f"{where}.throughput", body.get("throughput"), throughput=True),
        seconds=body.get("seconds"),
        bucket_metric=bucket.get("metric"),
        bucket_size=bucket.get("size", bucket.get("bytes_per_size")),
        bucket_min_io_bytes=bucket.get("min_io_bytes"),
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
    import yaml  # read once, on the first evaluation: a process that evaluates no disk never loads it

    raw = yaml.safe_load(CATALOG_PATH.read_text(encoding="utf-8"))
    types = {}
    for type_id, body in raw["types"].items():
        _keys(type_id, body, {"label", "provider", "records"})
        records = tuple(_record(type_id, record) for record in body["records"])
        types[type_id] = _Type(id=type_id, label=body["label"], provider=body["provider"], records=records)
    return types
