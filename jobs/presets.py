"""Built-in profiles: the field workloads benchweb must carry (docs/architecture.md), shared read-only by every team."""

from __future__ import annotations

from typing import Any

KIB = 1024
GIB = 1024**3
# The first run the pages suggest: short, reads only, and runnable on a directory and a device alike.
QUICK_CHECK = "Quick check: 4k randread QD16, 10 s"

_ULTRA = {
    "tool": "fio",
    "ioengine": "libaio",
    "direct": True,
    "time_based": True,
    "runtime_s": 60,
    "size_bytes": 4 * GIB,
    "jobs": 1,
}
_ULTRA_NOTE = "One of the six fio jobs run on 8 striped Alibaba Ultra disks (LVM, 64 KiB stripes)."

PRESETS: list[dict[str, Any]] = [
    {
        "name": QUICK_CHECK,
        "tool": "fio",
        "rw": "randread",
        "block_size_bytes": 4 * KIB,
        "iodepth": 16,
        "jobs": 1,
        "runtime_s": 10,
        "time_based": True,
        "ioengine": "libaio",
        "direct": True,
        "size_bytes": 256 * 1024**2,
        "description": "A short first run to see that a target works: 256 MiB test file, ten seconds.",
    },
    _ULTRA
    | {"name": "Ultra stripe: 4k randwrite QD128", "rw": "randwrite", "block_size_bytes": 4 * KIB, "iodepth": 128},
    _ULTRA
    | {"name": "Ultra stripe: 64k randwrite QD64", "rw": "randwrite", "block_size_bytes": 64 * KIB, "iodepth": 64},
    _ULTRA | {"name": "Ultra stripe: 4k randread QD128", "rw": "randread", "block_size_bytes": 4 * KIB, "iodepth": 128},
    _ULTRA | {"name": "Ultra stripe: 64k randread QD64", "rw": "randread", "block_size_bytes": 64 * KIB, "iodepth": 64},
    _ULTRA | {"name": "Ultra stripe: 64k seq write QD64", "rw": "write", "block_size_bytes": 64 * KIB, "iodepth": 64},
    _ULTRA | {"name": "Ultra stripe: 64k seq read QD64", "rw": "read", "block_size_bytes": 64 * KIB, "iodepth": 64},
    {
        "name": "Latency: 4k randrw QD32 300 s",
        "tool": "fio",
        "rw": "randrw",
        "read_percent": 50,
        "block_size_bytes": 4 * KIB,
        "iodepth": 32,
        "jobs": 1,
        "runtime_s": 300,
        "time_based": True,
        "ioengine": "libaio",
        "direct": True,
        "size_bytes": 4 * GIB,
        "description": "Same mean IOPS can hide very different latency distributions: read the percentiles.",
    },
    {
        "name": "ESSD PL3: 4k randwrite numjobs=10 QD128",
        "tool": "fio",
        "rw": "randwrite",
        "block_size_bytes": 4 * KIB,
        "iodepth": 128,
        "jobs": 10,
        "runtime_s": 60,
        "time_based": True,
        "ioengine": "libaio",
        "direct": True,
        "size_bytes": None,
        "extra_options": {"group_reporting": "1"},
        "description": "The 1,000,000-IOPS recipe for a raw ESSD PL3 device. Writes destroy the device's data.",
    },
    {
        "name": "SolidFire: 4k randread QD64",
        "tool": "fio",
        "rw": "randread",
        "block_size_bytes": 4 * KIB,
        "iodepth": 64,
        "jobs": 1,
        "runtime_s": 60,
        "time_based": True,
        "ioengine": "libaio",
        "direct": True,
        "size_bytes": 4 * GIB,
    },
    {
        "name": "SolidFire: 4k randwrite QD64",
        "tool": "fio",
        "rw": "randwrite",
        "block_size_bytes": 4 * KIB,
        "iodepth": 64,
        "jobs": 1,
        "runtime_s": 60,
        "time_based": True,
        "ioengine": "libaio",
        "direct": True,
        "size_bytes": 4 * GIB,
    },
    {
        "name": "ndisk64: 4k random 50/50, 4 processes",
        "tool": "ndisk64",
        "pattern": "random",
        "read_percent": 50,
        "jobs": 4,
        "block_size_bytes": 4 * KIB,
        "size_bytes": 32 * 1024**2,
        "runtime_s": 60,
        "direct": True,
        "description": "ndisk64 -R -r 50 -M 4 -b 4K -s 32M -t 60 -D. Without -D the page cache inflates results 30x.",
    },
    {
        "name": "ndisk64: 4k sequential 50/50, 4 processes",
        "tool": "ndisk64",
        "pattern": "sequential",
        "read_percent": 50,
        "jobs": 4,
        "block_size_bytes": 4 * KIB,
        "size_bytes": 32 * 1024**2,
        "runtime_s": 60,
        "direct": True,
        "description": "ndisk64 -S -r 50 -M 4 -b 4K -s 32M -t 60 -D.",
    },
]
for _preset in PRESETS[:6]:
    _preset.setdefault("description", _ULTRA_NOTE)


def sync_presets(profile_model: Any) -> None:
    """Create or update every built-in profile so that they always match this code."""
    for preset in PRESETS:
        fields = dict(preset)
        name = fields.pop("name")
        profile_model.objects.update_or_create(team=None, name=name, defaults=fields | {"builtin": True})
