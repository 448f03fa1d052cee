"""What differs between two runs' environments, as lines a person reads ("kernel 5.10.0-21 → 6.1.0-13",
"rq_affinity 1 → 2") (pure)."""

from __future__ import annotations

from collections.abc import Callable
from itertools import pairwise
from typing import Any

from jobs.environment.chain import chain_of

NOT_REPORTED = "(not reported)"

# (label, how to read it from an environment), in the order the lines are listed.
_FACTS: list[tuple[str, Callable[[dict[str, Any]], Any]]] = [
    ("kernel", lambda env: env.get("kernel")),
    ("kernel build", lambda env: env.get("kernel_build")),
    ("OS", lambda env: env.get("os")),
    ("fio", lambda env: env.get("fio")),
    ("CPUs", lambda env: env.get("cpus")),
    ("CPU model", lambda env: env.get("cpu_model")),
    ("memory (kB)", lambda env: env.get("mem_total_kb")),
    ("instance type", lambda env: env.get("instance_type")),
    ("filesystem", lambda env: _fs(env).get("type")),
    ("filesystem source", lambda env: _fs(env).get("source")),
    ("mount options", lambda env: _fs(env).get("options")),
    ("device", lambda env: _device_name(_device(env))),
    ("device chain", lambda env: chain_of(env).get("text")),
    ("device model", lambda env: _device(env).get("model")),
    ("device size (bytes)", lambda env: _device(env).get("size_bytes")),
    ("scheduler", lambda env: _device(env).get("scheduler")),
    ("nr_requests", lambda env: _device(env).get("nr_requests")),
    ("rq_affinity", lambda env: effective_rq_affinity(_device(env))),
    ("read_ahead_kb", lambda env: _device(env).get("read_ahead_kb")),
    ("blk-mq queues", lambda env: _device(env).get("queues")),
    ("queue CPUs", lambda env: " | ".join(_device(env).get("queue_cpus") or []) or None),
]


def environment_changes(old: dict[str, Any] | None, new: dict[str, Any] | None) -> list[str]:
    """One line per fact that differs, "<label> <old> → <new>"; a fact only one run reported shows the other as
    "(not reported)". Nothing when either run has no recorded environment: there is nothing to compare."""
    if not old or not new:
        return []
    lines = []
    for label, read in _FACTS:
        before, after = read(old), read(new)
        if before != after:
            lines.append(f"{label} {_shown(before)} → {_shown(after)}")
    return lines


def consecutive_changes(runs: list[tuple[int, dict[str, Any] | None]]) -> list[tuple[int, int, list[str]]]:
    """For runs in the order they ran, as (run id, environment): (earlier id, later id, lines) wherever the
    environment changed from one recorded run to the next; runs without one are skipped, not compared."""
    recorded = [(run_id, env) for run_id, env in runs if env]
    found = []
    for (before_id, before), (after_id, after) in pairwise(recorded):
        lines = environment_changes(before, after)
        if lines:
            found.append((before_id, after_id, lines))
    return found


def facts(env: dict[str, Any] | None) -> list[tuple[str, str]]:
    """(label, value) of every fact an environment holds, for a compact list on the run page."""
    if not env:
        return []
    shown = [(label, read(env)) for label, read in _FACTS]
    rows = [(label, str(value)) for label, value in shown if value is not None and value != ""]
    device = _device(env)
    if "rq_affinity_set" in device:
        rows = [(label, f"{value} (benchweb set it; it was {device.get('rq_affinity')})" if label == "rq_affinity"
                 else value) for label, value in rows]  # fmt: skip
    return rows


def effective_rq_affinity(device: dict[str, Any]) -> Any:
    """The value the run ran with: the one benchweb set before fio started, else the one the probe read."""
    return device.get("rq_affinity_set", device.get("rq_affinity"))


def _device_name(device: dict[str, Any]) -> str | None:
    """The kernel name, and what it is part of: a partition's queue is its parent's, a device-mapper device has its
    own name."""
    name = device.get("name")
    if name and device.get("partition_of"):
        name += f" (partition of {device['partition_of']})"
    if name and device.get("dm_name"):
        name += f" (device-mapper {device['dm_name']})"
    return name


def _shown(value: Any) -> str:
    if value is None or value == "":
        return NOT_REPORTED
    # A device chain has arrows of its own: quoted, "vg0/lv → dm-3 → vdb…vdi" stays apart from the change's arrow.
    return f"“{value}”" if "→" in str(value) else str(value)


def _fs(env: dict[str, Any]) -> dict[str, Any]:
    found = env.get("filesystem")
    return found if isinstance(found, dict) else {}


def _device(env: dict[str, Any]) -> dict[str, Any]:
    found = env.get("device")
    return found if isinstance(found, dict) else {}
