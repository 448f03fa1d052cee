"""Print a disk type's published limits for a size, stripe set, instance caps and block size."""

from __future__ import annotations

import json
import re
from datetime import date
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from jobs import limits

BLOCK_SIZE = re.compile(r"(?P<number>\d+)(?P<suffix>[kmg]?)(i?b)?", re.IGNORECASE)
BLOCK_FACTORS = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30}


def parse_block_size(text: str) -> int:
    """Bytes from '4096', '4k', '64K' or '1M' (1024-based, as fio reads them)."""
    match = BLOCK_SIZE.fullmatch(text.strip())
    if not match or int(match["number"]) == 0:
        raise CommandError(f"--block-size {text!r} is not a size: give bytes or a number with k, m or g.", returncode=2)
    return int(match["number"]) * BLOCK_FACTORS[match["suffix"].lower()]


def _number(option: str, text: str | None) -> float | None:
    if text is None:
        return None
    try:
        return float(text.replace(",", "").replace("_", ""))
    except ValueError:
        raise CommandError(f"{option} {text!r} is not a number.", returncode=2) from None


def _day(text: str | None) -> date | None:
    if text is None:
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise CommandError(f"--on {text!r} is not a date: give YYYY-MM-DD.", returncode=2) from None


def _count(value: float | None, digits: int = 1) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.{digits}f}"


def _iops(value: float | None) -> str:
    return "-" if value is None else f"{_count(value)} IOPS"


def _rate(value: float | None, unit: str) -> str:
    """Bytes per second in the unit the source publishes (MB/s or MiB/s), so figures match its table."""
    if value is None:
        return "-"
    return f"{_count(value / limits.THROUGHPUT_UNITS[unit])} {unit}"


def _block(size: int) -> str:
    for factor, suffix in ((2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB")):
        if size % factor == 0:
            return f"{size // factor} {suffix}"
    return f"{size} B"


class Command(BaseCommand):
    help = "Show a disk type's published IOPS and throughput limits (per volume x stripes, capped by the instance)."
    # Pure catalog maths: no database, so no system checks stand in the way.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("disk_type", nargs="?", help="Catalog type, e.g. aws-gp3 (see --list).")
        parser.add_argument("--list", action="store_true", help="List every type with its size unit and range.")
        parser.add_argument("--size", help="Volume size in the type's unit (GiB or GB).")
        parser.add_argument("--stripes", type=int, default=1, help="Volumes striped together (default 1).")
        parser.add_argument("--block-size", help="I/O size: bytes, or 4k / 64K / 1M (1024-based).")
        parser.add_argument("--iops", help="Provisioned IOPS (gp3, io1, io2, ...) or the limit itself for custom.")
        parser.add_argument("--throughput", help="Provisioned throughput in bytes/s, or the limit for custom.")
        parser.add_argument("--burst-iops", help="Burst IOPS (solidfire-qos, custom).")
        parser.add_argument("--burst-throughput", help="Burst throughput in bytes/s (solidfire-qos, custom).")
        parser.add_argument("--instance-iops-cap", help="The instance's IOPS cap.")
        parser.add_argument("--instance-throughput-cap", help="The instance's throughput cap in bytes/s.")
        parser.add_argument("--on", help="Use the figures published on this date (YYYY-MM-DD; default today).")
        parser.add_argument("--json", action="store_true", help="Print one JSON object.")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["list"]:
            self._list(_day(options["on"]))
            return
        if not options["disk_type"]:
            raise CommandError("Give a disk type; disk_limits --list shows them.", returncode=2)
        block_size = parse_block_size(options["block_size"]) if options["block_size"] else None
        spec = limits.Spec(
            disk_type=options["disk_type"],
            size=_number("--size", options["size"]),
            stripes=options["stripes"],
            iops=_number("--iops", options["iops"]),
            bytes_per_s=_number("--throughput", options["throughput"]),
            burst_iops=_number("--burst-iops", options["burst_iops"]),
            burst_bytes_per_s=_number("--burst-throughput", options["burst_throughput"]),
            instance_iops_cap=_number("--instance-iops-cap", options["instance_iops_cap"]),
            instance_bytes_per_s_cap=_number("--instance-throughput-cap", options["instance_throughput_cap"]),
        )
        try:
            result = limits.evaluate(spec, block_size=block_size, on=_day(options["on"]))
        except limits.SpecError as exc:
            # One line on stderr: the message already names the valid types or range.
            raise CommandError(" ".join(str(exc).split()), returncode=2) from exc
        if options["json"]:
            self.stdout.write(json.dumps(result.as_dict(), indent=2))
        else:
            self.stdout.write(self._table(result))

    def _list(self, on: date | None) -> None:
        for kind in limits.disk_types(on=on):
            if not kind.size_required:
                size = "size not used"
            elif kind.size_min is None and kind.size_max is None:
                size = f"{kind.size_unit}, no published range"
            elif kind.size_min is None:
                size = f"{kind.size_unit} up to {_count(kind.size_max)}"
            elif kind.size_max is None:
                size = f"{kind.size_unit} from {_count(kind.size_min)}"
            else:
                size = f"{kind.size_unit} {_count(kind.size_min)} to {_count(kind.size_max)}"
            self.stdout.write(f"{kind.id:<26} {size:<22} {kind.label}")

    def _table(self, result: limits.Limits) -> str:
        # The total's unit: the source's, or the instance cap's where that binds (typed in MB/s or MiB/s).
        unit = result.total_throughput_unit
        size = f", {_count(result.size)} {result.size_unit}" if result.size is not None else ""
        stripes = f" x {result.stripes} stripes" if result.stripes > 1 else ""
        tier = f" (tier {result.tier})" if result.tier else ""
        period = []
        if result.effective_from:
            period.append(f"from {result.effective_from.isoformat()}")
        if result.effective_until:
            period.append(f"until {result.effective_until.isoformat()}")
        in_effect = f" (in effect {' '.join(period)})" if period else ""
        lines = [
            f"{result.disk_type}{size}{stripes}{tier}",
            f"record {result.record_id}{in_effect}",
            f"{'':<12}{'IOPS':>16}  {'Throughput':>16}",
            f"{'baseline':<12}{_iops(result.iops):>16}  {_rate(result.throughput_bytes_per_s, unit):>16}",
        ]
        if result.write_iops is not None:
            lines.append(f"{'write':<12}{_iops(result.write_iops):>16}")
        if result.burst_iops is not None or result.burst_throughput_bytes_per_s is not None:
            lasting = f"  {result.burst_kind}"
            if result.burst_seconds is not None:
                lasting += f", {_count(result.burst_seconds / 60)} min from full"
            burst_rate = _rate(result.burst_throughput_bytes_per_s, unit)
            lines.append(f"{'burst':<12}{_iops(result.burst_iops):>16}  {burst_rate:>16}{lasting}")
        if result.block_size_bytes is not None:
            label = f"at {_block(result.block_size_bytes)}"
            rate = _rate(result.effective_throughput_bytes_per_s, unit)
            binds = f"  {result.binding} binds" if result.binding else ""
            lines.append(f"{label:<12}{_iops(result.effective_iops):>16}  {rate:>16}{binds}")
        if result.capped_by_instance:
            lines.append(f"capped by the instance: {', '.join(result.capped_by_instance)}")
        source = result.source
        if source.get("url"):
            verified = "verified" if source.get("verified") else "UNVERIFIED figures"
            lines.append(f"source: {source['url']} ({source.get('date')}, {verified})")
        if result.notes:
            lines.append(f"notes: {result.notes}")
        return "\n".join(lines)
