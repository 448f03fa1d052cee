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
    """Create or update every built-in profile, the sweeps too, so that they always match this code."""
    for preset in PRESETS + [_sweep_profile(sweep) for sweep in SWEEP_PRESETS]:
        fields = dict(preset)
        name = fields.pop("name")
        profile_model.objects.update_or_create(team=None, name=name, defaults=fields | {"builtin": True})


def _sweep_profile(sweep: dict[str, Any]) -> dict[str, Any]:
    """A built-in sweep as a profile's fields: its base's, its axes and its own name and description."""
    base: dict[str, Any] = dict(sweep["base"])
    return base | {"name": sweep["name"], "description": sweep["description"], "sweep_axes": sweep["axes"]}


def _base(name: str) -> dict[str, Any]:
    """A built-in profile's fields, as a sweep's base (without its name and description)."""
    preset = next(preset for preset in PRESETS if preset["name"] == name)
    return {key: value for key, value in preset.items() if key not in ("name", "description")}


# Built-in sweeps: a base profile (its fields, as PRESETS declares them) and the axes it varies, the first outer,
# in the syntax of jobs/tools/sweep_plan.py. Their plans and times are tested (tests/tools/test_sweep_plan.py).
SWEEP_PRESETS: list[dict[str, Any]] = [
    {
        "name": "QD sweep: 4k randread QD 1-256",
        "base": _ULTRA | {"rw": "randread", "block_size_bytes": 4 * KIB, "iodepth": 1},
        "axes": {"iodepth": "1-256 x2"},
        "description": "Where queue depth stops paying: nine points, one minute each, for the curve and its knee.",
    },
    {
        # Alibaba documents the recipe's one point, numjobs=10 iodepth=128 (the "ESSD PL3" preset); no grid is
        # published. This one climbs to that point in both directions, as the field report raised them.
        "name": "ESSD PL3: 4k randwrite numjobs x iodepth",
        "base": _base("ESSD PL3: 4k randwrite numjobs=10 QD128"),
        "axes": {"jobs": "1,2,4,10", "iodepth": "32-128 x2"},
        "description": "numjobs 1, 2, 4, 10 x iodepth 32, 64, 128 up to the 1,000,000-IOPS recipe's point. "
        "Writes destroy the device's data.",
    },
    {
        "name": "ndisk64: 4k random 50/50, 1/2/4 processes",
        "base": _base("ndisk64: 4k random 50/50, 4 processes"),
        "axes": {"jobs": "1-4 x2"},
        "description": "The Power VS report's sweep: with few processes another part becomes the bottleneck.",
    },
    {
        # SNIA PTS IOPS test (snia.org/forums/sssi/pts/iops, read 2026-11): random I/O over 7 R/W mixes, 100/0,
        # 95/5, 65/35, 50/50, 35/65, 5/95, 0/100, x 8 block sizes, 0.5, 4, 8, 16, 32, 64, 128, 1024 KiB, one minute
        # each: a 56-minute round. The spec repeats rounds until steady state (five in its measurement window),
        # after a purge and preconditioning, and leaves the outstanding I/O (threads x QD) to the tester, who
        # reports it. The mix runs outer, the block size inner, as in public fio implementations of it. 0.5k is
        # the spec's: on a device with 4 KiB logical blocks direct I/O at 512 bytes fails, so the plan refuses it
        # there when the device's logical block size is known, and the point fails (shown) when it is not.
        "name": "SNIA PTS IOPS matrix: 7 R/W mixes x 8 block sizes",
        "base": {
            "tool": "fio",
            "rw": "randrw",
            "read_percent": 100,
            "block_size_bytes": 4 * KIB,
            "iodepth": 32,
            "jobs": 1,
            "runtime_s": 60,
            "time_based": True,
            "ioengine": "libaio",
            "direct": True,
            "size_bytes": None,
            "extra_options": {"norandommap": "1", "randrepeat": "0"},
        },
        "axes": {"read_percent": "100,95,65,50,35,5,0", "block_size_bytes": "512,4k,8k,16k,32k,64k,128k,1M"},
        "description": "One round of the SNIA PTS IOPS test on a whole device, QD 32: precondition the device first. "
        "Writes destroy the device's data.",
    },
]
