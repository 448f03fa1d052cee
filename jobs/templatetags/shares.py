"""Shares (0-1) as people read them: "25 %", "0.4 %", "—" for none (the compliance and stability cards)."""

from __future__ import annotations

from django import template

from jobs import units

register = template.Library()


@register.filter
def share(value: float | None) -> str:
    """A share as a percent: whole above 10 %, one decimal below (a 0.4 % miss rate is not 0 %)."""
    if value is None:
        return "—"
    percent = 100 * value
    return f"{percent:.0f} %" if percent >= 10 or percent == 0 else f"{percent:.1f} %"


@register.filter
def block_size(value: int | None) -> str:
    """4096 as "4 KiB", the way fio's bs= reads."""
    return units.format_bytes(value)
