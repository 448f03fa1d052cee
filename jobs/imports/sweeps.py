"""Several outputs imported as a sweep: one RunSet of kind sweep (trigger import) whose members are the outputs,
each at the point its own parameters state.

The steps:

1. Each output is read as the single import reads it (importing.parse_results: the same refusals) and must hold one
   finished measurement; its point is what it states of iodepth, jobs (ndisk64: processes), block size and read
   share (fio JSON: the job options, fio's defaults where an option is not set; fio text: the job line; ndisk64:
   its header). An output that does not state one of them is refused, naming the output and the field: without
   it, whether that field varies cannot be known.
2. rw is not an axis: the outputs are grouped by their rw (ndisk64: random or sequential), and each group is a
   sweep of its own. Within a group the fields that differ are its axes, at most two, each sorted ascending, the
   outer one first: read share, then block size, then jobs, then iodepth, so that a curve along the load (the
   inner axis) is one run of points. The outputs must fill the grid of the axes, one output a point.
3. Everything is stored in one transaction, or nothing: the set, one succeeded member a point (as the single
   import stores a run, with run_set, set_index and set_point), and the set's end as a sweep that ran ends
   (jobs/sets/advancing.py: its result, its knees recorded as the disk's series). The members keep their place
   in time: the last point ends at the import's date, each earlier one where the next one starts.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from jobs import errors
from jobs.imports import importing
from jobs.models import Disk, Run, RunSet
from jobs.sets import advancing, requesting
from jobs.tools import sweep_plan
from jobs.tools.summary import ParseError, ParseResult

# Outer to inner: the load axes (iodepth, jobs) last, so each curve along them is one run of points.
AXIS_ORDER = ("read_percent", "block_size_bytes", "jobs", "iodepth")
MIN_OUTPUTS = 2


class SweepImportRefused(errors.FieldRefused):
    """The outputs cannot be imported as sweeps; the message names the output (by number and name) and its field."""

    def __init__(self, message: str) -> None:
        super().__init__("outputs", message)


@dataclass(frozen=True)
class Output:
    """One pasted text or uploaded file, read: its one result and the point it states."""

    number: int  # from 1, in the order given
    name: str
    text: str
    result: ParseResult
    tool: str
    rw: str
    point: dict[str, int]

    @property
    def called(self) -> str:
        return f"output {self.number} ({self.name})"


@dataclass(frozen=True)
class Sweep:
    """One sweep to store: its rw, its plan, and the outputs in the plan's order (output i at plan.points[i])."""

    tool: str
    rw: str
    plan: sweep_plan.Plan
    outputs: tuple[Output, ...]

    @property
    def name(self) -> str:
        """'randread: block size 4k,64k × iodepth 64,128', the set's profile_name."""
        return f"{'ndisk64 ' if self.tool == 'ndisk64' else ''}{self.rw}: {_axes_text(self.plan.axes, self.tool)}"[:100]


def page_path(run_set: RunSet) -> str:
    """Where a set's page is (jobs/sets/ pages, under /sets/<pk>/)."""
    return f"/sets/{run_set.pk}/"


def read_outputs(sources: list[tuple[str, str]], tool: str = "auto", disk: Disk | None = None) -> list[Output]:
    """Each source read as one output of a sweep; SweepImportRefused names the first that cannot be one."""
    if len(sources) < MIN_OUTPUTS:
        raise SweepImportRefused(
            f"A sweep import takes at least {MIN_OUTPUTS} outputs, one a point; got {len(sources)}. "
            "Import a single output with Import results."
        )
    outputs = [_output(number, name, text, tool) for number, (name, text) in enumerate(sources, 1)]
    seen: dict[str, Output] = {}
    for output in outputs:
        key = importing.fingerprint(output.text, output.result.label)
        if key in seen:
            raise SweepImportRefused(f"{output.called} is the same output as {seen[key].called}; give each once.")
        seen[key] = output
        first = importing.duplicate_of(disk, output.text, output.result.label) if disk else None
        if first is not None:
            raise SweepImportRefused(
                f"{output.called} is already stored on {disk} as run {first.pk}; nothing was stored. Leave it out, "
                "or import another output in its place."
            )
    return outputs


def plan_sweeps(outputs: list[Output]) -> list[Sweep]:
    """The outputs grouped by rw, each group a sweep whose axes are the fields that differ (step 2 above)."""
    groups: dict[tuple[str, str], list[Output]] = {}
    for output in outputs:
        groups.setdefault((output.tool, output.rw), []).append(output)
    return [_sweep(tool, rw, group) for (tool, rw), group in groups.items()]


def import_sweeps(
    disk: Disk, sources: list[tuple[str, str]], *, at: Any = None, user: Any = None, tool: str = "auto"
) -> list[RunSet]:
    """Store the outputs as sweeps of the disk, one per rw, all or nothing; the sets in the order of their rw's
    first output. SweepImportRefused (or DuplicateImport, when the same output was stored meanwhile) says why
    nothing was stored."""
    finished = at or timezone.now()
    if finished < importing.EARLIEST_IMPORT:
        raise errors.FieldRefused("finished_at", f"{finished.isoformat()} is before 1970: give when the runs finished.")
    sweeps = plan_sweeps(read_outputs(sources, tool, disk))
    with transaction.atomic():
        # As the single import: one import of a disk at a time, so the same outputs saved twice are stored once.
        list(Disk.objects.select_for_update(no_key=True).filter(pk=disk.pk).values_list("pk"))
        return [_store(disk, sweep, finished=finished, user=user) for sweep in sweeps]


def _output(number: int, name: str, text: str, tool: str) -> Output:
    called = f"output {number} ({name})"
    try:
        results = importing.parse_results(text, tool)
    except ParseError as exc:
        raise SweepImportRefused(f"{called}: {exc}") from exc
    if len(results) > 1:
        labels = ", ".join(repr(result.label) for result in results)
        raise SweepImportRefused(
            f"{called} holds {len(results)} results ({labels}); a sweep takes one result an output. Import it with "
            "Import results, which stores each as a run of its own."
        )
    result = results[0]
    if result.job_errors:
        raise SweepImportRefused(
            f"{called} reports a job error ({result.job_errors[0]['errno']}): a sweep imports finished "
            "measurements only. Import it with Import results, which stores it as a failed run."
        )
    if result.partial:
        raise SweepImportRefused(f"{called} is an excerpt ({result.partial}): give the whole output.")
    run_tool = str(result.summary["tool"])
    rw = _rw(called, result, run_tool)
    return Output(number, name, text, result, run_tool, rw, _point(called, result, run_tool))


def _rw(called: str, result: ParseResult, tool: str) -> str:
    rw = result.summary["workload"].get("rw")
    if not rw:
        raise SweepImportRefused(
            f"{called}: its rw is not stated in the output ({_where_stated(result.format)}), so its workload is "
            "unknown; give the output in a format that states it."
        )
    if tool == "ndisk64":
        return "random" if str(rw).startswith("rand") else "sequential"
    return str(rw)


def _point(called: str, result: ParseResult, tool: str) -> dict[str, int]:
    """Every axis field the output states (ndisk64 has no queue depth); refused naming the first it does not."""
    stated = result.summary["workload"]
    # fio JSON prints the options a job set; one it did not set ran at fio's default (iodepth=1, numjobs=1).
    options = result.settings if result.format == "fio-json" and result.settings else None
    read_percent = result.summary.get("read_percent")
    values: dict[str, Any] = {
        "iodepth": stated.get("iodepth") or (1 if options is not None and "iodepth" not in options else None),
        "jobs": stated.get("numjobs") or (1 if options is not None and "numjobs" not in options else None),
        "block_size_bytes": result.summary.get("block_size_bytes"),
        "read_percent": read_percent,
    }
    point: dict[str, int] = {}
    for field, value in values.items():
        if field == "iodepth" and tool == "ndisk64":
            continue
        name = sweep_plan.KINDS[field].name(tool)
        if value is None:
            raise SweepImportRefused(
                f"{called}: its {name} is not stated in the output ({_where_stated(result.format)}), so its point "
                "cannot be read; give the output in a format that states it."
            )
        if float(value) != int(value):
            raise SweepImportRefused(f"{called}: its {name} is {value:g}, not a whole number a sweep can vary.")
        point[field] = int(value)
    return point


def _where_stated(fmt: str) -> str:
    return {
        "fio-json": "fio JSON states a job's options, e.g. iodepth, bs, rwmixread",
        "fio-text": "fio's text report states rw, bs, ioengine and iodepth on its job line, not rwmixread",
        "fio-terse": "terse lines state no job options: import the JSON or text report",
        "ndisk64": "ndisk64 states its processes, block size and read share in its header",
    }.get(fmt, f"a {fmt} output does not state it")


def _sweep(tool: str, rw: str, outputs: list[Output]) -> Sweep:
    if len(outputs) < MIN_OUTPUTS:
        raise SweepImportRefused(
            f"{outputs[0].called} is the only output of rw={rw}. rw is not an axis: the outputs of each rw are a "
            f"sweep of their own, of at least {MIN_OUTPUTS} points. Add its other points, or leave it out."
        )
    varying = [f for f in AXIS_ORDER if f in outputs[0].point and len({o.point[f] for o in outputs}) > 1]
    what = f"The outputs of rw={rw} ({_listed(outputs)})"
    if not varying:
        raise SweepImportRefused(
            f"{what} all state {sweep_plan.point_text(outputs[0].point, tool)}: a sweep's outputs differ in "
            "iodepth, jobs, block size or read share."
        )
    if len(varying) > sweep_plan.MAX_AXES:
        names = ", ".join(sweep_plan.KINDS[f].name(tool) for f in varying)
        raise SweepImportRefused(
            f"{what} differ in {len(varying)} fields ({names}); a sweep varies at most {sweep_plan.MAX_AXES}. "
            "Import them as several sweeps, each holding the others fixed."
        )
    axes = tuple(sweep_plan.Axis(f, tuple(sorted({o.point[f] for o in outputs}))) for f in varying)
    runtime = max(max(1, round(o.result.summary.get("runtime_s") or 0)) for o in outputs)
    plan = sweep_plan.Plan(axes, 0, runtime)
    at: dict[tuple[int, ...], Output] = {}
    for output in outputs:
        key = tuple(output.point[f] for f in varying)
        if key in at:
            where = sweep_plan.point_text(dict(zip(varying, key, strict=True)), tool)
            raise SweepImportRefused(
                f"{at[key].called} and {output.called} are both at {where}; give one output a point."
            )
        at[key] = output
    missing = [p for p in plan.points if tuple(p.values()) not in at]
    if missing:
        raise SweepImportRefused(
            f"{what} make {len(at)} of the {plan.count} points of {_axes_text(axes, tool)}; "
            f"missing: {'; '.join(sweep_plan.point_text(p, tool) for p in missing)}. Add the missing outputs, or "
            "leave out those of a value that is not measured at every point."
        )
    return Sweep(tool, rw, plan, tuple(at[tuple(p.values())] for p in plan.points))


def _axes_text(axes: tuple[sweep_plan.Axis, ...], tool: str) -> str:
    """'block size 4k,64k × iodepth 64,128'."""
    return " × ".join(
        f"{sweep_plan.KINDS[a.field].name(tool)} {sweep_plan.format_axis(a.field, a.values)}" for a in axes
    )


def _listed(outputs: list[Output]) -> str:
    numbers = [str(o.number) for o in outputs]
    return f"{', '.join(numbers[:-1])} and {numbers[-1]}"


def _store(disk: Disk, sweep: Sweep, *, finished: datetime, user: Any) -> RunSet:
    first = sweep.outputs[0]
    run_set = RunSet.objects.create(
        kind=RunSet.Kind.SWEEP,
        disk=disk,
        profile_name=sweep.name,
        base_parameters=_base_parameters(first),
        plan=requesting.plan_json(sweep.plan),
        trigger=Run.Trigger.IMPORT,
        created_by=user if getattr(user, "is_authenticated", False) else None,
        explanation="importing",
    )
    ends = _end_times(sweep, finished)
    members = [
        importing.store_result(
            disk, output.text, output.result, name=output.name, finished=end, user=user,
            member=importing.Member(run_set, index, point),
        )
        for index, (output, point, end) in enumerate(zip(sweep.outputs, sweep.plan.points, ends, strict=True))
    ]  # fmt: skip
    # Every member is final: the set ends as a sweep that ran does (its result, the knees recorded as the disk's
    # series, what moved since the last sweep of its name), at the times its outputs ran.
    advancing.advance(run_set.pk)
    run_set.refresh_from_db()
    RunSet.objects.filter(pk=run_set.pk).update(
        started_at=members[0].started_at,
        finished_at=members[-1].finished_at,
        explanation=f"imported from {len(members)} outputs; {run_set.explanation}",
    )
    run_set.refresh_from_db()
    return run_set


def _end_times(sweep: Sweep, finished: datetime) -> list[datetime]:
    """When each point ended: the last at `finished`, each earlier one when the next one started."""
    runtimes = [timedelta(seconds=o.result.summary.get("runtime_s") or 0) for o in sweep.outputs]
    later = list(itertools.accumulate(reversed(runtimes[1:]), initial=timedelta(0)))
    return [finished - offset for offset in reversed(later)]


def _base_parameters(output: Output) -> dict[str, Any]:
    """The first point's parameters, in the shape of Profile.parameters() where the output states them."""
    summary_ = output.result.summary
    base: dict[str, Any] = {
        "tool": output.tool,
        "block_size_bytes": output.point["block_size_bytes"],
        "runtime_s": summary_.get("runtime_s"),
        "direct": summary_.get("direct"),
        "read_percent": output.point["read_percent"],
        "jobs": output.point["jobs"],
        "format": output.result.format,
        "source": "import",
    }
    if output.tool == "ndisk64":
        return base | {"pattern": output.rw}
    return base | {
        "rw": output.rw,
        "iodepth": output.point["iodepth"],
        "ioengine": summary_["workload"].get("ioengine"),
    }
