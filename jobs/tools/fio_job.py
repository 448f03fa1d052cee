"""fio's job file and command line for one run of a profile on one target (pure)."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Any

from jobs.tools import fio_fill
from jobs.tools.fio_common import MIXED_MODES, READ_ONLY_MODES, RW_MODES
from jobs.tools.options import (
    IOENGINES,
    ToolOptionError,
    bool_param,
    int_param,
    option_problem,
    run_id_of,
    safe_path,
    ss_problems,
)


@dataclass(frozen=True)
class FioJob:
    jobfile: str  # the INI text to store at jobfile_path on the target
    argv: list[str]
    jobfile_path: str
    output_path: str

    def argv_quoted(self) -> str:
        return " ".join(shlex.quote(arg) for arg in self.argv)


def build_fio_job(
    params: dict[str, Any], target_path: str, target_kind: str, run_dir: str, *, readonly: bool
) -> FioJob:
    """The job file and command line for one run of a fio profile (Profile.parameters()) on one target.

    readonly says the run must not write. Profiles whose rw only reads are treated as read-only anyway, unless
    they fill the target first (fio_fill), which writes.
    """
    if params.get("tool", "fio") != "fio":
        raise ToolOptionError("tool", f"build_fio_job needs a fio profile, not {params.get('tool')!r}.")
    if target_kind not in ("directory", "block"):
        raise ToolOptionError("target_kind", f"target_kind must be 'directory' or 'block', not {target_kind!r}.")
    rw = params.get("rw")
    if rw not in RW_MODES:
        raise ToolOptionError("rw", f"rw must be one of {', '.join(RW_MODES)}; got {rw!r}.")
    if readonly and rw not in READ_ONLY_MODES:
        raise ToolOptionError("rw", f"This run must not write, but rw={rw} writes; choose read or randread.")
    fill_passes = fio_fill.passes(params)
    if readonly and fill_passes:
        raise ToolOptionError("precondition", "This run must not write, but its fill writes the whole target.")
    readonly = rw in READ_ONLY_MODES and not fill_passes
    ioengine = params.get("ioengine")
    if ioengine not in IOENGINES:
        raise ToolOptionError("ioengine", f"ioengine must be one of {', '.join(sorted(IOENGINES))}; got {ioengine!r}.")
    size = params.get("size_bytes")
    if size is not None:
        size = int_param(params, "size_bytes", 1)
    elif target_kind == "directory":
        raise ToolOptionError("size_bytes", "Give a size: fio creates a file of that size per job in the directory.")
    extras = params.get("extra_options") or {}
    if not isinstance(extras, dict):
        raise ToolOptionError("extra_options", "extra_options must map fio option names to values.")
    for name, value in extras.items():
        problem = option_problem(name, value)
        if problem:
            raise ToolOptionError("extra_options", problem)
    pinning = _queue_pinning(params, extras)
    target = safe_path(target_path)
    run_dir = safe_path(run_dir, "run_dir")
    run_id = run_id_of(run_dir)
    jobs = int_param(params, "jobs", 1)
    ramp = int_param(params, "ramp_time_s", 0)

    lines = [f"; benchweb run {run_id}. Sizes are byte counts on purpose: fio reads 4KiB as 4000 (pitfall 2.7)."]
    if fill_passes:
        lines += [*fio_fill.section(params, target, target_kind, run_id), ""]
    lines += [
        # The job name is also the test file's name in a directory (benchweb-<run>.<job>.0), so two runs
        # on one directory never share a file.
        f"[benchweb-{run_id}]",
        *(["stonewall"] if fill_passes else []),  # the measured job starts once the fill has ended
        f"ioengine={ioengine}",
        f"rw={rw}",
    ]
    if rw in MIXED_MODES:
        lines.append(f"rwmixread={int_param(params, 'read_percent', 0, 100)}")
    lines += [
        f"bs={int_param(params, 'block_size_bytes', 1)}",
        f"iodepth={int_param(params, 'iodepth', 1)}",
        f"direct={int(bool_param(params, 'direct'))}",
        f"numjobs={jobs}",
    ]
    if jobs > 1 and "group_reporting" not in extras:
        # One merged entry per run keeps latency percentiles exact; separate entries can't be combined
        # (docs/reference/fio-output.md#group-reporting).
        lines.append("group_reporting=1")
    lines += pinning
    lines += [f"runtime={int_param(params, 'runtime_s', 1)}", f"time_based={int(bool_param(params, 'time_based'))}"]
    if ramp:
        lines.append(f"ramp_time={ramp}")
    if size is not None:
        lines.append(f"size={size}")
    if target_kind == "directory":
        # No --readonly here even for reads: fio must first lay the test file out, which is a write, and
        # --readonly forbids that. The file is benchweb's own, so unlink=1 removes it afterwards.
        lines += [f"directory={target}", "unlink=1"]
    else:
        lines.append(f"filename={target}")
        if readonly:
            lines.append("allow_file_create=0")
    lines += [f"{name}={value}" for name, value in extras.items()]
    lines += _steady_state_lines(params)

    jobfile_path = f"{run_dir}/job.fio"
    output_path = f"{run_dir}/result.json"
    argv = ["fio", "--output-format=json", "--status-interval=1", f"--output={output_path}"]
    if readonly and target_kind == "block":
        argv.append("--readonly")
    argv.append(jobfile_path)
    return FioJob("\n".join(lines) + "\n", argv, jobfile_path, output_path)


def _steady_state_lines(params: dict[str, Any]) -> list[str]:
    """fio's steady-state detection, when the profile asks for it: stop once the criterion holds over the
    window (the verdict is in the JSON's "steadystate", read by fio_steady)."""
    metric = params.get("ss_metric")
    if not metric:
        return []
    ramp = params.get("ss_ramp_s")
    problems = ss_problems(metric, params.get("ss_limit"), params.get("ss_dur_s"), ramp, int(params["runtime_s"]))
    if problems:
        field, message = next(iter(problems.items()))
        raise ToolOptionError(field, message)
    lines = [f"ss={metric}:{params['ss_limit']}", f"ss_dur={params['ss_dur_s']}"]
    return [*lines, f"ss_ramp={ramp}"] if ramp else lines


_CPU_LIST = re.compile(r"[0-9]{1,5}(-[0-9]{1,5})?(,[0-9]{1,5}(-[0-9]{1,5})?)*")


def _queue_pinning(params: dict[str, Any], extras: dict[str, Any]) -> list[str]:
    """cpus_allowed (split: one job per CPU) for a profile pinned to the device's queue CPUs; `queue_cpus` is the
    list the environment probe read from sysfs on the target, known only at launch (so none when a profile is
    checked against a target beforehand)."""
    if not params.get("pin_queue_cpus"):
        return []
    if {"cpus_allowed", "cpus_allowed_policy", "cpumask"} & set(extras):
        raise ToolOptionError(
            "extra_options",
            "The profile pins fio jobs to the queue CPUs (pin_queue_cpus), which sets cpus_allowed itself: remove "
            "cpus_allowed, cpus_allowed_policy and cpumask from the extra options, or untick the pinning.",
        )
    cpus = params.get("queue_cpus")
    if cpus is None:
        return []
    if not isinstance(cpus, str) or not _CPU_LIST.fullmatch(cpus):
        raise ToolOptionError("queue_cpus", f"queue_cpus must be a CPU list such as 0-3,8; got {cpus!r}.")
    return [f"cpus_allowed={cpus}", "cpus_allowed_policy=split"]
