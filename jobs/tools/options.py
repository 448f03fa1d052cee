"""Which fio options a profile may set beyond its typed fields (pure: no Django).

Anything that runs commands, reads other files or writes outside the target is absent on purpose:
exec_prerun/exec_postrun, include, ioengine=external, filename/directory and every *_log path
are chosen by benchweb, never by a profile.
"""

from __future__ import annotations

import math
import re
from typing import Any

from jobs import paths

# What a profile's typed fields may hold: the Profile model's validators, and the axes of a sweep
# (jobs/tools/sweep_plan.py). fio itself takes an iodepth up to 65536 and 4096 jobs; a profile stops at these.
MAX_IODEPTH = 4096
MAX_JOBS = 256
MIN_BLOCK_SIZE = 512
# fio with direct=1 reads and writes whole 512-byte sectors at the least.
SECTOR = 512
IOENGINES = frozenset({"libaio", "io_uring", "psync", "sync", "pvsync", "pvsync2", "posixaio"})

# option -> regex its value must match in full. Digits are [0-9]: \d also takes '١٢', which fio refuses.
NUMBER = r"[0-9]+"
SIZE = r"[0-9]+[kKmMgGtT]?"
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
    # One cap for reads and writes alike, or reads,writes (a latency-target search sets a mixed job's so).
    "rate_iops": r"[0-9]+(?:,[0-9]+)?",
    "rate": SIZE,
    "thinktime": NUMBER,
    "offset": SIZE,
    "offset_increment": SIZE,
    "random_distribution": r"(random|zipf:[0-9.]+|pareto:[0-9.]+|normal:[0-9.]+)",
    "percentage_random": NUMBER,
    # Entries separated by ':' as fio writes them; the old "(…:?)+" let digits split between entries in
    # exponentially many ways, so a long value without colons held the request for minutes.
    "bssplit": r"[0-9]+[kKmM]?/[0-9]+(?::[0-9]+[kKmM]?/[0-9]+)*:?",
    "blockalign": SIZE,
    "zero_buffers": BOOL,
    "invalidate": BOOL,
    "hipri": BOOL,
    "fixedbufs": BOOL,
    "registerfiles": BOOL,
    "sqthread_poll": BOOL,
    "cpus_allowed": r"[0-9,\-]+",
    "cpus_allowed_policy": r"(shared|split)",
    "numa_cpu_nodes": r"[0-9,\-]+",
    "lat_percentiles": BOOL,
    "clat_percentiles": BOOL,
    "percentile_list": r"[0-9.:]+",
    "unified_rw_reporting": r"(none|mixed|both|0|1)",
    "nrfiles": NUMBER,
    "file_service_type": r"(random|roundrobin|sequential)",
    "allow_mounted_write": r"0",
}

# Options people reach for that must never come from a profile, with the reason a person is shown.
FORBIDDEN_OPTIONS: dict[str, str] = {
    "exec_prerun": "it runs a shell command on the target",
    "exec_postrun": "it runs a shell command on the target",
    "include": "it reads another job file from the target",
    "ioengine": "choose the I/O engine in the profile's ioengine field (external engines load code)",
    "filename": "benchweb names the files from the run's target",
    "directory": "benchweb names the files from the run's target",
    "filename_format": "benchweb names the files from the run's target",
    "opendir": "benchweb names the files from the run's target",
    "server": "fio runs over SSH, never as a network server",
    "client": "fio runs over SSH, never as a network client",
    "remote-config": "fio runs over SSH, never as a network client",
    "daemonize": "fio runs over SSH, never as a network server",
    "output": "benchweb chooses where results are written",
    "output-format": "benchweb always asks for JSON",
    "readonly": "benchweb adds it itself for read-only profiles",
}
FORBIDDEN_SUFFIXES = ("_log", "_log_compression")  # write_bw_log, write_lat_log, ... take file paths
OPTION_NAME = re.compile(r"[a-z][a-z0-9_]*")


# The options that cap or steer a job's rate: a latency-target search sets the rate itself, step by step.
RATE_OPTIONS = frozenset({"rate", "rate_iops", "rate_min", "rate_iops_min", "latency_target", "latency_window",
                          "latency_percentile"})  # fmt: skip


def rate_iops_value(total: int, jobs: int, read_percent: int | None) -> str:
    """fio's rate_iops for `total` IOPS over a whole run: fio caps each of the numjobs clones, and caps each
    direction by one number, so the total is shared out among the jobs and, for a mixed job (read_percent not
    None), written reads,writes in its mix. Rounded up: a run asked for `total` is never capped below it."""
    per_job = total / jobs
    if read_percent is None:
        return str(max(1, math.ceil(per_job)))
    reads = math.ceil(per_job * read_percent / 100)
    return f"{reads},{math.ceil(per_job * (100 - read_percent) / 100)}"


class ToolOptionError(ValueError):
    """A profile value a tool cannot be run with; `field` names the profile field to fix."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def option_problem(name: Any, value: Any) -> str | None:
    """Why `name=value` may not go into a job file, or None when it may."""
    if not isinstance(name, str):
        return f"{name!r} is not a fio option name."
    reason = FORBIDDEN_OPTIONS.get(name.lstrip("-"))
    if reason is None and name.endswith(FORBIDDEN_SUFFIXES):
        reason = "log options write files at paths of their own"
    if reason is not None:
        return f"fio option '{name}' is not allowed: {reason}."
    if not OPTION_NAME.fullmatch(name):
        return f"{name!r} is not a fio option name (lower-case letters, digits and _)."
    pattern = EXTRA_OPTIONS.get(name)
    if pattern is None:
        return f"fio option '{name}' is not allowed here; allowed: {', '.join(sorted(EXTRA_OPTIONS))}."
    if isinstance(value, bool) or not isinstance(value, str | int) or not re.fullmatch(pattern, str(value)):
        return f"fio option '{name}' has an invalid value {value!r}."
    return None


def check_extra_options(options: Any) -> dict[str, str]:
    """Return {"extra_options": message} for the first option that is not allowed, else {}."""
    if not isinstance(options, dict):
        return {"extra_options": 'Give an object of option names to values, e.g. {"group_reporting": "1"}.'}
    for name, value in options.items():
        problem = option_problem(name, value)
        if problem:
            return {"extra_options": problem}
    return {}


# A path goes into an INI line and onto a command line. fio splits file names at ':' and reads '$' and ';'
# specially inside a job file, so paths keep to plain characters: the set a run directory base is saved with.
SAFE_PATH = re.compile(f"/[{paths.TOOL_CHARACTERS}]*")
RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def int_param(params: dict[str, Any], key: str, low: int, high: int | None = None) -> int:
    """params[key] as an int within [low, high], or ToolOptionError naming the field."""
    value = params.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ToolOptionError(key, f"{key} must be a whole number, not {value!r}.")
    if value < low or (high is not None and value > high):
        bounds = f"at least {low}" if high is None else f"between {low} and {high}"
        raise ToolOptionError(key, f"{key} must be {bounds}; got {value}.")
    return value


def bool_param(params: dict[str, Any], key: str) -> bool:
    value = params.get(key)
    if not isinstance(value, bool):
        raise ToolOptionError(key, f"{key} must be true or false, not {value!r}.")
    return value


def safe_path(path: str, field: str = "target_path") -> str:
    """An absolute path that is safe in a job file and as one argv element, without a trailing slash."""
    if not isinstance(path, str) or not SAFE_PATH.fullmatch(path):
        raise ToolOptionError(
            field,
            f"{path!r} must be an absolute path of {paths.TOOL_CHARACTERS_SHOWN} only "
            "(fio reads ':' as a separator between file names).",
        )
    return path.rstrip("/") or "/"


def run_id_of(run_dir: str) -> str:
    """The run directory's last component, which names the test files so runs never share one."""
    run_id = safe_path(run_dir, "run_dir").rsplit("/", 1)[-1]
    if not RUN_ID.fullmatch(run_id):
        raise ToolOptionError("run_dir", f"run directory {run_dir!r} must end in a name like a run's UUID.")
    return run_id


# fio's steady-state detection (ss, ss_dur, ss_ramp): the criteria it knows, and a limit as it parses one, a
# number that may be a share of the mean (0.3%) or a value in the metric's own unit (20).
SS_METRICS = ("iops", "iops_slope", "bw", "bw_slope")
SS_LIMIT = re.compile(r"[0-9]{1,9}(?:\.[0-9]{1,6})?%?")
# One point is no window: a slope needs two, and a band of one value always holds.
SS_MIN_DURATION_S = 2


def ss_problems(metric: Any, limit: Any, duration_s: Any, ramp_s: Any, runtime_s: int) -> dict[str, str]:
    """{field: message} for steady-state settings fio would refuse or that could never be judged within the
    runtime; {} when they are fine (or when no criterion is set and nothing else is either)."""
    if not metric:
        stray = {"ss_limit": limit, "ss_dur_s": duration_s, "ss_ramp_s": ramp_s}
        return {
            field: "Set without a steady-state criterion: choose one in ss_metric, or leave this empty."
            for field, value in stray.items()
            if value not in ("", None)
        }
    if metric not in SS_METRICS:
        return {"ss_metric": f"Choose one of {', '.join(SS_METRICS)}; got {metric!r}."}
    problems = {}
    if limit in ("", None):
        problems["ss_limit"] = "Give the limit, e.g. 0.3% (a share of the window's mean) or 20 (in the metric's unit)."
    elif not isinstance(limit, str) or not SS_LIMIT.fullmatch(limit) or float(limit.rstrip("%")) <= 0:
        problems["ss_limit"] = f"{limit!r} is not a limit fio takes: a number above 0, optionally with %, e.g. 0.3%."
    if duration_s is None:
        problems["ss_dur_s"] = "Give the window in seconds, e.g. 30: fio judges the last ss_dur seconds."
    elif isinstance(duration_s, bool) or not isinstance(duration_s, int) or duration_s < SS_MIN_DURATION_S:
        problems["ss_dur_s"] = f"The window must be a whole number of at least {SS_MIN_DURATION_S} seconds."
    if ramp_s is not None and (isinstance(ramp_s, bool) or not isinstance(ramp_s, int) or ramp_s < 0):
        problems["ss_ramp_s"] = "The ss ramp must be a whole number of seconds (0 or more), or empty."
    if not problems and (ramp_s or 0) + duration_s >= runtime_s:
        problems["ss_dur_s"] = (
            f"The window ({duration_s} s) after the ss ramp ({ramp_s or 0} s) must end before the runtime "
            f"({runtime_s} s) does, or fio can never judge it: shorten them or lengthen the runtime."
        )
    return problems
