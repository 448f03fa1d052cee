"""Is the number the disk's? A collected run's verdicts (jobs/analysis/verdicts.py) from its facts, fio's own view
and its host's telemetry seconds in its measured window (HostSample), with its team's thresholds: stored on
Run.verdicts when the run is stored (jobs/runs/storing.py). Only a succeeded fio run is judged: another has no
number, and ndisk64's output has no facts to judge it by (None: not judged)."""

from __future__ import annotations

from typing import Any, cast

from django.utils import timezone

from jobs import environment
from jobs.analysis import verdicts
from jobs.models import HostSample, Run


def verdicts_of(run: Run, summary: dict[str, Any] | None) -> list[verdicts.Verdict] | None:
    params = run.parameters or {}
    if not summary or params.get("tool", "fio") != "fio":
        return None
    total = summary.get("total") or {}
    cpu = summary.get("cpu") or {}
    limits = run.limits_snapshot or {}
    facts = verdicts.RunFacts(
        direct=_flag(params.get("direct")),
        rw=str(params.get("rw") or ""),
        size_bytes=size if isinstance(size := params.get("size_bytes"), int) and not isinstance(size, bool) else None,
        jobs=int(params.get("jobs") or 1),
        iops=verdicts.number(total.get("iops")),
        bytes_per_s=verdicts.number(total.get("bw_bytes_per_s")),
        runtime_s=verdicts.number(summary.get("runtime_s")),
        fio_usr_percent=verdicts.number(cpu.get("usr_percent")),
        fio_sys_percent=verdicts.number(cpu.get("sys_percent")),
        limit_iops=verdicts.number(limits.get("effective_iops", limits.get("iops"))),
        limit_bytes_per_s=verdicts.number(
            limits.get("effective_throughput_bytes_per_s", limits.get("throughput_bytes_per_s"))
        ),
    )
    chain = environment.chain_of(run.environment)
    devices = environment.chain_devices(run.environment)
    found: verdicts.Chain = {
        "device": devices[0] if devices else None,
        "members": [name for name in chain.get("members", []) if isinstance(name, str)],
    }
    return verdicts.judge(_measured_seconds(run), found, facts, run.disk.team.verdict_thresholds)


def _measured_seconds(run: Run) -> list[verdicts.Sample]:
    """The host's seconds after the run's ramp (fio measures nothing before it), up to now: the run is being
    stored, its end is now."""
    ramp = float((run.parameters or {}).get("ramp_time_s") or 0)
    seconds = HostSample.of_run(run, until=timezone.now())
    return [cast("verdicts.Sample", second) for second in seconds if second["t_s"] > ramp]


def _flag(value: object) -> bool | None:
    return None if value is None else bool(value)
