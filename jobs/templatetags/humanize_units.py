"""Numbers for people: 23.5k IOPS, 91.6 MiB/s, 10.3 ms."""

from __future__ import annotations

from typing import Any

from django import template

from jobs import limits, units

register = template.Library()


@register.filter
def iops(value: float | None) -> str:
    return units.format_iops(value)


@register.filter
def bytes_per_s(value: float | None) -> str:
    return units.format_bytes_per_s(value)


@register.filter
def micros(value: float | None) -> str:
    return units.format_micros(value)


@register.filter
def iops_exact(value: float | None) -> str:
    return units.format_iops_exact(value)


@register.filter
def rate(bytes_per_s: float | None, unit: str | None) -> str:
    """A limit's throughput in the unit its source publishes: 1,120 MB/s, not 1.04 GiB/s."""
    return limits.rate_text(bytes_per_s, unit)


@register.filter
def converted(bytes_per_s: float | None, unit: str | None) -> str:
    """The same throughput in the other family of units, for small print: ≈ 1,068.1 MiB/s."""
    return limits.converted_text(bytes_per_s, unit)


@register.filter
def level_of(value: float, change: Any) -> str:
    """A change point's level as the model words it (a bandwidth also in its disk's limit unit)."""
    return str(change.level_text(value))


@register.filter
def measured_rate(bytes_per_s: float | None, unit: str | None) -> str:
    """A measured throughput in benchweb's unit and, beside a limit in another, in the limit's: 176 MiB/s =
    184.5 MB/s (limits.beside)."""
    return limits.beside(units.format_bytes_per_s(bytes_per_s), bytes_per_s, unit)
