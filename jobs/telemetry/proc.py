"""What a Linux host was doing, second by second, from the kernel's own counters (pure).

The observation step of a host with running runs (jobs/runs/watching.py) reads these files over the session's SFTP
channel once a second — no process is started on the host for it, the SFTP server being the one long-lived reader:

    /proc/stat          CPU time by kind, overall and per CPU (USER_HZ ticks)
    /proc/meminfo       memory and page cache (kB)
    /proc/loadavg       the 1-minute load
    /proc/pressure/io, cpu, memory     pressure stall information ("some"/"full" total= µs stalled; kernels
                        from 4.20 with PSI on: absent elsewhere, and then left out)
    /proc/diskstats     each block device's I/O counters (Documentation/admin-guide/iostats.rst)

`reading()` turns the texts into a Reading (cumulative counters); `sample()` turns two readings into one second's
figures in the shape the run page, the API and the verdicts use (jobs/analysis/verdicts.py):

    {"t": epoch s (the later read's middle, the worker's clock),
     "cpu": {"user", "system", "iowait", "steal", "idle": % of all CPUs, "busiest": {"cpu": n, "busy": %}},
     "memory": {"total_bytes", "available_bytes", "cached_bytes", "dirty_bytes"},
     "load1": float,
     "pressure": {"io_some", "io_full", "cpu_some", "memory_some", "memory_full": % of the interval stalled},
     "devices": {name: {"read_iops", "write_iops", "read_mb_s", "write_mb_s", "queue", "await_ms", "util"}}}

A figure the host did not give is absent, never guessed; a counter that went backwards (a device replaced, the
host rebooted) gives no figure for that interval.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

FILES = {
    "stat": "/proc/stat",
    "meminfo": "/proc/meminfo",
    "loadavg": "/proc/loadavg",
    "pressure_io": "/proc/pressure/io",
    "pressure_cpu": "/proc/pressure/cpu",
    "pressure_memory": "/proc/pressure/memory",
    "diskstats": "/proc/diskstats",
}
# /proc/diskstats: the sector is 512 bytes whatever the device's own (iostats.rst).
SECTOR_BYTES = 512
_MEMINFO = {"MemTotal": "total_bytes", "MemAvailable": "available_bytes", "Cached": "cached_bytes",
            "Dirty": "dirty_bytes"}  # fmt: skip


@dataclass(frozen=True)
class Disk:
    """One device's cumulative counters from /proc/diskstats."""

    reads: int
    read_sectors: int
    read_ms: int
    writes: int
    write_sectors: int
    write_ms: int
    busy_ms: int  # time with I/O in flight
    weighted_ms: int  # time × I/Os in flight: its rate is the average queue size


@dataclass(frozen=True)
class Reading:
    """A host's cumulative counters at one instant (`at`: epoch s, the worker's clock)."""

    at: float
    cpu: tuple[int, ...] | None = None  # user nice system idle iowait irq softirq steal, all CPUs
    cpus: dict[int, tuple[int, ...]] = field(default_factory=dict)
    memory: dict[str, int] = field(default_factory=dict)
    load1: float | None = None
    stalls_us: dict[str, int] = field(default_factory=dict)  # io_some, io_full, cpu_some, memory_some, …
    disks: dict[str, Disk] = field(default_factory=dict)


def reading(texts: dict[str, str | None], at: float, devices: set[str] | None = None) -> Reading:
    """The counters in the files read (`texts` by FILES key; None for a file the host does not have), keeping
    only `devices` of /proc/diskstats when given."""
    cpu, cpus = _stat(texts.get("stat") or "")
    return Reading(
        at=at,
        cpu=cpu,
        cpus=cpus,
        memory=_meminfo(texts.get("meminfo") or ""),
        load1=_load1(texts.get("loadavg") or ""),
        stalls_us={
            f"{kind}_{level}": value
            for kind in ("io", "cpu", "memory")
            for level, value in _pressure(texts.get(f"pressure_{kind}") or "").items()
        },
        disks=_diskstats(texts.get("diskstats") or "", devices),
    )


def sample(before: Reading, after: Reading) -> dict[str, Any] | None:
    """The figures of the interval between two readings, stamped at the later one; None when no time passed."""
    seconds = after.at - before.at
    if seconds <= 0:
        return None
    found: dict[str, Any] = {"t": round(after.at, 3)}
    if (cpu := _cpu_shares(before, after)) is not None:
        found["cpu"] = cpu
    if after.memory:
        found["memory"] = dict(after.memory)
    if after.load1 is not None:
        found["load1"] = after.load1
    stalls = {name: _share(after.stalls_us[name] - was, seconds * 1e6)
              for name, was in before.stalls_us.items() if name in after.stalls_us}  # fmt: skip
    if stalls := {name: value for name, value in stalls.items() if value is not None}:
        found["pressure"] = stalls
    devices = {name: figures for name, disk in after.disks.items()
               if name in before.disks and (figures := _disk_figures(before.disks[name], disk, seconds))}  # fmt: skip
    if devices:
        found["devices"] = devices
    return found


def _stat(text: str) -> tuple[tuple[int, ...] | None, dict[int, tuple[int, ...]]]:
    total: tuple[int, ...] | None = None
    cpus: dict[int, tuple[int, ...]] = {}
    for line in text.splitlines():
        name, _, rest = line.partition(" ")
        if not name.startswith("cpu"):
            continue
        values = _ints(rest.split()[:8])
        if values is None or len(values) < 4:
            continue
        values = values + (0,) * (8 - len(values))
        if name == "cpu":
            total = values
        elif name[3:].isdigit():
            cpus[int(name[3:])] = values
    return total, cpus


def _cpu_shares(before: Reading, after: Reading) -> dict[str, Any] | None:
    if before.cpu is None or after.cpu is None:
        return None
    delta = [b - a for a, b in zip(before.cpu, after.cpu, strict=True)]
    total = sum(delta)
    if total <= 0 or min(delta) < 0:
        return None
    user, nice, system, idle, iowait, irq, softirq, steal = delta

    def share(value: int) -> float:
        return round(100.0 * value / total, 1)

    shares: dict[str, Any] = {"user": share(user + nice), "system": share(system + irq + softirq),
                              "iowait": share(iowait), "steal": share(steal), "idle": share(idle)}  # fmt: skip
    busiest = max(((n, _busy(before.cpus[n], ticks)) for n, ticks in after.cpus.items() if n in before.cpus),
                  key=lambda pair: -1.0 if pair[1] is None else pair[1], default=None)  # fmt: skip
    if busiest is not None and busiest[1] is not None:
        shares["busiest"] = {"cpu": busiest[0], "busy": busiest[1]}
    return shares


def _busy(before: tuple[int, ...], after: tuple[int, ...]) -> float | None:
    """One CPU's busy share: all but idle and iowait."""
    delta = [b - a for a, b in zip(before, after, strict=True)]
    total = sum(delta)
    if total <= 0 or min(delta) < 0:
        return None
    return round(100.0 * (total - delta[3] - delta[4]) / total, 1)


def _meminfo(text: str) -> dict[str, int]:
    found = {}
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        parts = rest.split()
        if name in _MEMINFO and parts and parts[0].isdigit():
            found[_MEMINFO[name]] = int(parts[0]) * (1024 if parts[1:2] == ["kB"] else 1)
    return found


def _load1(text: str) -> float | None:
    first = text.split()[:1]
    try:
        return float(first[0]) if first else None
    except ValueError:
        return None


def _pressure(text: str) -> dict[str, int]:
    """{"some": µs, "full": µs} from a pressure file's total= fields."""
    found = {}
    for line in text.splitlines():
        level, *fields = line.split()
        for item in fields:
            key, _, value = item.partition("=")
            if key == "total" and level in ("some", "full") and value.isdigit():
                found[level] = int(value)
    return found


def _diskstats(text: str, devices: set[str] | None) -> dict[str, Disk]:
    found = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 14 or (devices is not None and parts[2] not in devices):
            continue
        values = _ints(parts[3:14])
        if values is None:
            continue
        reads, _, read_sectors, read_ms, writes, _, write_sectors, write_ms, _, busy_ms, weighted_ms = values
        found[parts[2]] = Disk(reads, read_sectors, read_ms, writes, write_sectors, write_ms, busy_ms, weighted_ms)
    return found


def _disk_figures(before: Disk, after: Disk, seconds: float) -> dict[str, float | None]:
    deltas = {name: getattr(after, name) - getattr(before, name) for name in Disk.__dataclass_fields__}
    if min(deltas.values()) < 0:
        return {}
    ios = deltas["reads"] + deltas["writes"]
    return {
        "read_iops": round(deltas["reads"] / seconds, 1),
        "write_iops": round(deltas["writes"] / seconds, 1),
        "read_mb_s": round(deltas["read_sectors"] * SECTOR_BYTES / 1e6 / seconds, 3),
        "write_mb_s": round(deltas["write_sectors"] * SECTOR_BYTES / 1e6 / seconds, 3),
        "queue": round(deltas["weighted_ms"] / (seconds * 1000), 2),
        "await_ms": round((deltas["read_ms"] + deltas["write_ms"]) / ios, 3) if ios else None,
        "util": min(100.0, round(100.0 * deltas["busy_ms"] / (seconds * 1000), 1)),
    }


def _share(value: int, whole: float) -> float | None:
    return None if value < 0 or whole <= 0 else min(100.0, round(100.0 * value / whole, 1))


def _ints(parts: list[str]) -> tuple[int, ...] | None:
    try:
        return tuple(int(part) for part in parts)
    except ValueError:
        return None
