"""The preconditioning fill: a first fio job that writes the whole target before the measured one (pure).

Fresh blocks of a thin-provisioned or cloud volume, and a test file laid out just now, read faster than blocks
that hold data, so a profile can ask for a fill (Profile.precondition = "fill"): the job file then starts with
a section `[precondition-<run>]` that writes the target sequentially `passes` times (loops), and the measured
section follows with `stonewall`, so it starts only once the fill has ended. fio reports both in one output:
the parsers keep the measured job's numbers as the run's result and put the fill's apart (summary_of).
"""

from __future__ import annotations

from typing import Any

from jobs.tools.options import ToolOptionError, int_param
from jobs.tools.summary import amount, finite

FILL = "fill"
JOB_PREFIX = "precondition-"
# Large sequential writes fill a device fastest; the queue depth matters only to engines that queue.
BLOCK_BYTES = 2**20
QUEUEING_ENGINES = frozenset({"libaio", "io_uring", "posixaio"})


def passes(params: dict[str, Any]) -> int:
    """How many times the run fills its target first; 0 when it does not."""
    value = params.get("precondition") or ""
    if value not in ("", FILL):
        raise ToolOptionError("precondition", f'precondition must be "{FILL}" or empty, not {value!r}.')
    if value != FILL:
        return 0
    return int_param(params, "precondition_passes", 1, 4)


def section(params: dict[str, Any], target: str, kind: str, run_id: str) -> list[str]:
    """The fill's job section, written before the measured one.

    On a block device it writes every byte of it (no size: fio takes the device's). In a directory it writes
    the measured job's own test files, which it creates: the same count (numjobs, nrfiles) and size, and the
    same names (filename_format spells fio's default name of the measured section, benchweb-<run>.<job>.<file>),
    and it leaves them in place (unlink=0) for the measured job to read.
    """
    engine = params["ioengine"]
    direct = bool(params.get("direct"))
    lines = [
        f"[{JOB_PREFIX}{run_id}]",
        f"ioengine={engine}",
        "rw=write",
        f"bs={_block_bytes(params, kind)}",
        f"iodepth={32 if engine in QUEUEING_ENGINES else 1}",
        f"direct={int(direct)}",
        f"loops={passes(params)}",
    ]
    if not direct:
        lines.append("end_fsync=1")  # buffered writes count only once they reach the disk
    if kind == "block":
        return [*lines, f"filename={target}", "allow_file_create=0"]
    jobs = int_param(params, "jobs", 1)
    lines.append(f"numjobs={jobs}")
    if jobs > 1:
        lines.append("group_reporting=1")
    nrfiles = (params.get("extra_options") or {}).get("nrfiles")
    if nrfiles:
        lines.append(f"nrfiles={nrfiles}")
    return [
        *lines,
        f"size={int_param(params, 'size_bytes', 1)}",
        f"filename_format=benchweb-{run_id}.$jobnum.$filenum",
        f"directory={target}",
        "unlink=0",
    ]


def _block_bytes(params: dict[str, Any], kind: str) -> int:
    """1 MiB, or the profile's own block size for test files smaller than that (fio refuses a block larger
    than its file)."""
    if kind == "block":
        return BLOCK_BYTES
    nrfiles = int(finite((params.get("extra_options") or {}).get("nrfiles")) or 1)
    per_file = int_param(params, "size_bytes", 1) // max(nrfiles, 1)
    return BLOCK_BYTES if per_file >= BLOCK_BYTES else int_param(params, "block_size_bytes", 1)


def is_fill(job: Any) -> bool:
    return isinstance(job, dict) and str(job.get("jobname", "")).startswith(JOB_PREFIX)


def measured_only(doc: dict[str, Any]) -> dict[str, Any]:
    """The document without the fill's entries: what the measured job reported."""
    jobs = doc.get("jobs")
    if not isinstance(jobs, list) or not any(is_fill(job) for job in jobs):
        return doc
    return {**doc, "jobs": [job for job in jobs if not is_fill(job)]}


def filling(doc: dict[str, Any]) -> float | None:
    """Bytes the fill has written so far while it still runs (the measured job has not started), else None."""
    jobs = doc.get("jobs")
    jobs = jobs if isinstance(jobs, list) else []
    fill = [job for job in jobs if is_fill(job)]
    if not fill:
        return None
    measured_ms = sum(_number(job, direction, "runtime") for job in jobs if not is_fill(job)
                      for direction in ("read", "write"))  # fmt: skip
    return None if measured_ms else sum(_number(job, "write", "io_bytes") for job in fill)


def summary_of(doc: dict[str, Any]) -> dict[str, Any] | None:
    """summary["precondition"] from the final document: what fio said the fill did, None when there was none.

    seconds: the fill's runtime (its jobs ran together: the longest), bytes: what they wrote in all, passes:
    the loops option as fio printed it (None when it did not). Nothing is estimated.
    """
    jobs = doc.get("jobs")
    fill = [job for job in (jobs if isinstance(jobs, list) else []) if is_fill(job)]
    if not fill:
        return None
    runtimes = [_amount(job, "runtime") for job in fill]
    written = [_amount(job, "io_bytes") for job in fill]
    loops = finite((fill[0].get("job options") or {}).get("loops"))
    return {
        "seconds": max(r for r in runtimes if r is not None) / 1000 if None not in runtimes else None,
        "bytes": int(sum(b for b in written if b is not None)) if None not in written else None,
        "passes": int(loops) if loops is not None and loops.is_integer() else None,
    }


def _amount(job: dict[str, Any], key: str) -> float | None:
    write = job.get("write")
    return amount(write.get(key), f'the fill\'s "write" "{key}"') if isinstance(write, dict) else None


def _number(job: Any, direction: str, key: str) -> float:
    data = job.get(direction) if isinstance(job, dict) else None
    return (finite(data.get(key)) or 0.0) if isinstance(data, dict) else 0.0
