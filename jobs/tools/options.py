"""Which fio options a profile may set beyond its typed fields (pure: no Django).

Anything that runs commands, reads other files or writes outside the target is absent on purpose:
exec_prerun/exec_postrun, include, ioengine=external, filename/directory and every *_log path
are chosen by benchweb, never by a profile.
"""

from __future__ import annotations

import re
from typing import Any

IOENGINES = frozenset({"libaio", "io_uring", "psync", "sync", "pvsync", "pvsync2", "posixaio"})

# option -> regex its value must match in full.
NUMBER = r"\d+"
SIZE = r"\d+[kKmMgGtT]?"
BOOL = r"[01]"
EXTRA_OPTIONS: dict[str, str] = {
    "group_reporting": BOOL,
    "norandommap": BOOL,
    "randrepeat": BOOL,
    "refill_buffers": BOOL,
    "buffer_compress_percentage": NUMBER,
    "fsync": NUMBER,
    "fdatasync": NUMBER,
    "end_fsync": BOOL,
    "iodepth_batch_submit": NUMBER,
    "iodepth_batch_complete_min": NUMBER,
    "iodepth_batch_complete_max": NUMBER,
    "iodepth_low": NUMBER,
    "rate_iops": NUMBER,
    "rate": SIZE,
    "thinktime": NUMBER,
    "offset": SIZE,
    "offset_increment": SIZE,
    "random_distribution": r"(random|zipf:[\d.]+|pareto:[\d.]+|normal:[\d.]+)",
    "percentage_random": NUMBER,
    "bssplit": r"(\d+[kKmM]?/\d+:?)+",
    "blockalign": SIZE,
    "zero_buffers": BOOL,
    "invalidate": BOOL,
    "hipri": BOOL,
    "fixedbufs": BOOL,
    "registerfiles": BOOL,
    "sqthread_poll": BOOL,
    "cpus_allowed": r"[\d,\-]+",
    "cpus_allowed_policy": r"(shared|split)",
    "numa_cpu_nodes": r"[\d,\-]+",
    "lat_percentiles": BOOL,
    "clat_percentiles": BOOL,
    "percentile_list": r"[\d.:]+",
    "unified_rw_reporting": r"(none|mixed|both|0|1)",
    "nrfiles": NUMBER,
    "file_service_type": r"(random|roundrobin|sequential)",
    "allow_mounted_write": r"0",
}


def check_extra_options(options: Any) -> dict[str, str]:
    """Return {"extra_options": message} for the first option that is not allowed, else {}."""
    if not isinstance(options, dict):
        return {"extra_options": 'Give an object of option names to values, e.g. {"group_reporting": "1"}.'}
    for name, value in options.items():
        pattern = EXTRA_OPTIONS.get(name)
        if pattern is None:
            allowed = ", ".join(sorted(EXTRA_OPTIONS))
            return {"extra_options": f"fio option '{name}' is not allowed here; allowed: {allowed}."}
        if not re.fullmatch(pattern, str(value)):
            return {"extra_options": f"fio option '{name}' has an invalid value {value!r}."}
    return {}
