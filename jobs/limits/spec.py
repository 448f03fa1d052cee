"""The Spec a caller gives for a disk, and the checks of what a person typed into it, before anything is computed
(pure): a size in the type's published range, whole stripes, only the provisioned values the type takes, each
in its allowed range. A refusal is a SpecError naming the field and the values it may take."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import date

from jobs.limits.catalog import THROUGHPUT_UNITS, USER_FIELDS, _Bound, _Record, _Type


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
    # The unit the figures above were typed in ("MB/s" or "MiB/s"); empty: read from the figures (typed_unit).
    typed_unit: str = ""


def _num(value: float | None) -> str:
    if value is None:
        return "none"
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.3f}".rstrip("0").rstrip(".")


def positive(name: str, value: float | None, what: str) -> float | None:
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


def check_size(kind: _Type, record: _Record, size: float | None, on: date) -> float:
    if record.size_unit is None:
        return float(size) if isinstance(size, int | float) and not isinstance(size, bool) else 0.0
    valid = _range_text(record.size_min, record.size_max, record.size_unit)
    if size is None:
        raise SpecError("size", f"{kind.id} needs a size in {record.size_unit}: {valid}.")
    checked = positive("size", size, record.size_unit)
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


def check_stripes(stripes: int) -> int:
    if isinstance(stripes, bool) or not isinstance(stripes, int) or stripes < 1:
        raise SpecError("stripes", f"stripes must be a whole number of volumes, 1 or more; got {stripes!r}.")
    return stripes


def reject_unused(kind: _Type, record: _Record, spec: Spec) -> None:
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


def user_value(
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
    value = positive(bound.field, given, "bytes per second" if bound.unit else "IOPS")
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
