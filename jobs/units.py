"""Formatting of measured numbers for people (pure)."""

from __future__ import annotations

import re

DASH = "—"
# Sizes as fio and ndisk64 users type them, 1024-based (fio reads 4k as 4096; "4KiB" too): 4096, 4k, 64KiB, 1M.
_SIZE = re.compile(r"([0-9]+)\s*([kmgt]?)(?:i?b)?", re.IGNORECASE)
_SIZE_FACTORS = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}


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


_LATENCY = re.compile(r"([0-9]{1,9}(?:\.[0-9]{1,6})?)\s*(|us|µs|μs|ms|s)", re.IGNORECASE)
_LATENCY_FACTORS = {"": 1, "us": 1, "µs": 1, "μs": 1, "ms": 1000, "s": 1_000_000}


def format_duration(seconds: int) -> str:
    """Exact, in the largest units that add up: 45 s, 9 min, 1 min 30 s, 1 h 20 min."""
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{n} {unit}" for n, unit in ((hours, "h"), (minutes, "min"), (secs, "s")) if n]
    return " ".join(parts) or "0 s"


def parse_size(text: str) -> int:
    """Bytes from 4096, 4k, 64KiB, 256M or 4G (1024-based); ValueError when the text is not a size."""
    match = _SIZE.fullmatch(text.strip())
    if not match:
        raise ValueError(f"{text.strip()!r} is not a byte count such as 4096, 4k, 64k, 256M or 4G")
    return int(match[1]) * _SIZE_FACTORS[match[2].lower()]


def parse_micros(text: str) -> int:
    """Whole µs from 800, 800us, 800 µs, 1.5ms or 2 s (a bare number is µs); ValueError when it is not a latency."""
    match = _LATENCY.fullmatch(text.strip())
    if not match or not float(match[1]) > 0:
        raise ValueError(f"{text.strip()!r} is not a latency such as 800us, 1ms or 1.5 ms")
    return max(1, round(float(match[1]) * _LATENCY_FACTORS[match[2].lower()]))


def short_micros(value: int) -> str:
    """1000 -> 1ms, 800 -> 800us: a latency as it is typed back into a form."""
    return f"{value // 1000}ms" if value and value % 1000 == 0 else f"{value}us"


def short_size(value: int) -> str:
    """4096 -> 4k, 268435456 -> 256M: the way fio and ndisk64 users write sizes (1024-based)."""
    for suffix, factor in (("T", 2**40), ("G", 2**30), ("M", 2**20), ("k", 2**10)):
        if value and value % factor == 0:
            return f"{value // factor}{suffix}"
    return str(value)
