"""Evaluation: a disk's published limits for its size, stripe set, instance and block size (pure).

1. pick the type's record in effect on the given date;
2. compute one volume's baseline and burst limits (formula, tier table or provisioned values);
3. multiply by the stripe count;
4. take the minimum with the instance caps;
5. at a block size, find which limit binds: IOPS, or throughput / block size.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

from jobs.limits.catalog import (
    THROUGHPUT_UNITS,
    USER_FIELDS,
    _Burst,
    _catalog,
    _Record,
    _Type,
)
from jobs.limits.formulas import formula_lines
from jobs.limits.spec import (
    Spec,
    SpecError,
    check_size,
    check_stripes,
    positive,
    reject_unused,
    user_value,
)


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
    # The unit the source publishes the disk's throughput in (MB/s = 10^6 B/s, MiB/s = 2^20 B/s); pages show
    # every throughput in its own unit so it reads digit by digit like the source.
    throughput_unit: str = "MB/s"
    io_basis: str | None = None
    effective_from: date | None = None
    effective_until: date | None = None
    # One volume's limits before striping and instance caps, and the caps themselves, for the breakdown.
    volume_iops: float | None = None
    volume_throughput_bytes_per_s: float | None = None
    volume_burst_iops: float | None = None
    volume_burst_throughput_bytes_per_s: float | None = None
    instance_iops_cap: float | None = None
    instance_throughput_bytes_per_s_cap: float | None = None
    # The instance cap was typed by a person, in MB/s or MiB/s; the total is in the cap's unit where it binds.
    instance_throughput_unit: str | None = None
    total_throughput_unit: str = "MB/s"

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
    # One volume's limits in words and the source's units (formulas.formula_lines).
    formula: list[str] = field(default_factory=list)

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


# ----------------------------------------------------------------------------- helpers


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


def _bucket_seconds(burst: _Burst, size: float, base: _Volume, peak: _Volume) -> float | None:
    if burst.seconds is not None:
        return float(burst.seconds)
    if burst.bucket_metric == "iops" and peak.iops is not None and base.iops is not None and peak.iops > base.iops:
        assert burst.bucket_size is not None  # a token bucket always has a size
        return burst.bucket_size / (peak.iops - base.iops)
    if (
        burst.bucket_metric == "throughput"
        and peak.bytes_per_s is not None
        and base.bytes_per_s is not None
        and peak.bytes_per_s > base.bytes_per_s
    ):
        assert burst.bucket_size is not None
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
    reject_unused(kind, record, spec)
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
            values[name] = user_value(kind, record, bounds[name], getattr(spec, name), context, size)
            context[name] = values[name]

    adding = provisioned is not None and provisioned.mode == "add"
    added_iops = values.get("iops")
    if provisioned is not None and not adding:
        iops = added_iops
    else:
        iops = formula_iops
        if adding and added_iops:
            iops = (iops or 0.0) + added_iops
    bytes_per_s = values.get("bytes_per_s")
    if bytes_per_s is None and record.throughput is not None:
        bytes_per_s = record.throughput.value(size, formula_iops if adding else iops)
    if adding and added_iops and provisioned and provisioned.adds_throughput:
        bytes_per_s = (bytes_per_s or 0.0) + provisioned.adds_throughput.value(size, added_iops)

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


def typed_unit(*values: float | None) -> str:
    """The unit a person typed bytes/s in: MiB/s when every value is a whole number of MiB/s (a whole number of
    MB/s almost never is), else MB/s, the form's default."""
    given = [value for value in values if value]
    return "MiB/s" if given and all(float(value) % 2**20 == 0 for value in given) else "MB/s"


def _volume_unit(record: _Record, spec: Spec) -> str:
    """The unit of one volume's throughput: the source's, or the person's where they typed the figures."""
    bounds = record.provisioned.bounds if record.provisioned else {}
    typed = "bytes_per_s" in bounds and bounds["bytes_per_s"].unit == "B/s"
    if not typed:
        return record.throughput_unit
    return spec.typed_unit or typed_unit(spec.bytes_per_s, spec.burst_bytes_per_s)


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
    stripes = check_stripes(spec.stripes)
    iops_cap = positive("instance_iops_cap", spec.instance_iops_cap, "IOPS")
    bytes_cap = positive("instance_bytes_per_s_cap", spec.instance_bytes_per_s_cap, "bytes per second")
    size = check_size(kind, record, spec.size, day)
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

    volume_unit = _volume_unit(record, spec)
    cap_unit = (spec.typed_unit or typed_unit(bytes_cap)) if bytes_cap is not None else None
    # The total is the cap where the cap binds, or where the disk publishes no throughput of its own.
    cap_is_total = bytes_cap is not None and (volume.base.bytes_per_s is None or "throughput" in capped)

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
        throughput_unit=volume_unit,
        io_basis=record.io_basis,
        effective_from=record.effective_from,
        effective_until=record.effective_until,
        volume_iops=_clean(volume.base.iops),
        volume_throughput_bytes_per_s=_clean(volume.base.bytes_per_s),
        volume_burst_iops=_clean(_above(volume.peak.iops, volume.base.iops)) if bursting else None,
        volume_burst_throughput_bytes_per_s=(
            _clean(_above(volume.peak.bytes_per_s, volume.base.bytes_per_s)) if bursting else None
        ),
        instance_iops_cap=_clean(iops_cap),
        instance_throughput_bytes_per_s_cap=_clean(bytes_cap),
        instance_throughput_unit=cap_unit,
        total_throughput_unit=cap_unit if cap_is_total and cap_unit else volume_unit,
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
                formula=formula_lines(record),
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
