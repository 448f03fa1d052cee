"""Disk-spec catalog evaluation (pure: no Django). INTERFACE STUB - being replaced by the full implementation."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from typing import Any


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

    def as_dict(self) -> dict[str, Any]:
        from dataclasses import asdict

        return asdict(self)


def evaluate(spec: Spec, *, block_size: int | None = None, on: date | None = None) -> Limits:
    if spec.disk_type != "custom":
        raise SpecError("disk_type", "stub")
    return Limits(iops=spec.iops, throughput_bytes_per_s=spec.bytes_per_s)


@dataclass(frozen=True)
class DiskType:
    id: str
    label: str
    provider: str
    size_unit: str
    size_min: float | None
    size_max: float | None


def disk_types() -> list[DiskType]:
    return []
