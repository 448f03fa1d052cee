"""Numbers for people: 23.5k IOPS, 91.6 MiB/s, 10.3 ms."""

from __future__ import annotations

from django import template

from jobs import units

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
