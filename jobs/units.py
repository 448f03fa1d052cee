"""Formatting of measured numbers for people (pure)."""

from __future__ import annotations

DASH = "—"


def _number(value: object) -> float | None:
    """Templates pass '' for a missing summary key; anything that is not a number shows as a dash."""
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def _scaled(value: float, steps: list[tuple[float, str]]) -> str:
    for factor, suffix in steps:
        if abs(value) >= factor:
            scaled = value / factor
            return f"{scaled:.3g}{suffix}" if scaled < 1000 else f"{scaled:,.0f}{suffix}"
    return f"{value:.3g}"


def format_iops(value: float | None) -> str:
    value = _number(value)
    if value is None:
        return DASH
    if abs(value) < 1000:
        return f"{value:.3g} IOPS" if value != int(value) else f"{int(value)} IOPS"
    return _scaled(value, [(1e6, "M"), (1e3, "k")]) + " IOPS"


def format_bytes_per_s(value: float | None) -> str:
    value = _number(value)
    if value is None:
        return DASH
    for factor, unit in [(2**40, "TiB/s"), (2**30, "GiB/s"), (2**20, "MiB/s"), (2**10, "KiB/s")]:
        if abs(value) >= factor:
            return f"{value / factor:.3g} {unit}" if value / factor < 1000 else f"{value / factor:,.0f} {unit}"
    return f"{value:.0f} B/s"


def format_bytes(value: float | None) -> str:
    """A size: 1.5 GiB, 300 KiB, 12 B."""
    return format_bytes_per_s(value).removesuffix("/s")


def format_micros(value: float | None) -> str:
    value = _number(value)
    if value is None:
        return DASH
    if abs(value) >= 1_000_000:
        return f"{value / 1_000_000:.3g} s"
    if abs(value) >= 1000:
        return f"{value / 1000:.3g} ms"
    return f"{value:.3g} µs"


def format_iops_exact(value: float | None) -> str:
    value = _number(value)
    """Theoretical limits are compared digit by digit with a vendor's table: keep every digit."""
    if value is None:
        return DASH
    return f"{value:,.0f} IOPS" if value == round(value) else f"{value:,.1f} IOPS"
