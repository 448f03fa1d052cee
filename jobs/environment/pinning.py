"""The ESSD PL3 recipe (pure): fio jobs pinned to the CPUs that serve the target device's blk-mq queues
(`cpus_allowed` with the `split` policy, one job per CPU), and rq_affinity=2 so that completions are handled on
the CPU that issued the I/O.

Everything comes from the environment probe's report (probe.py): the queues' cpu_list files read from sysfs on
the target, its online CPU count, rq_affinity and whether the login user may write it. A profile without
pin_queue_cpus is left alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

_CPU_RANGE = re.compile(r"([0-9]{1,5})(?:-([0-9]{1,5}))?")
# A kernel block device name (sda, nvme0n1, loop3, dm-0, vdb): the only thing written into a sysfs path.
_DEVICE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
WANTED_RQ_AFFINITY = 2


@dataclass(frozen=True)
class Pinning:
    """What a pinned profile adds to a launch: the job file's CPU list, the sysfs writes the wrapper makes before
    fio starts, warnings for the run, and the environment as it will be during the run; or why it cannot run."""

    refusal: str = ""
    queue_cpus: str = ""
    tunables: tuple[tuple[str, str], ...] = ()
    warnings: list[str] = field(default_factory=list)
    environment: dict[str, Any] = field(default_factory=dict)


def cpu_set(text: str) -> set[int] | None:
    """The CPUs of a kernel CPU list ("0-3,8-11", "0, 1" as blk-mq's cpu_list prints it); None if it is not one."""
    cpus: set[int] = set()
    for part in text.split(","):
        match = _CPU_RANGE.fullmatch(part.strip())
        if not match:
            return None
        first, last = int(match.group(1)), int(match.group(2) or match.group(1))
        if last < first:
            return None
        cpus.update(range(first, last + 1))
    return cpus


def cpu_list(cpus: set[int]) -> str:
    """The shortest CPU list for a set, as fio's cpus_allowed takes it: {0, 1, 2, 5} gives "0-2,5"."""
    ranges: list[list[int]] = []
    for cpu in sorted(cpus):
        if ranges and cpu == ranges[-1][1] + 1:
            ranges[-1][1] = cpu
        else:
            ranges.append([cpu, cpu])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in ranges)


def plan(params: dict[str, Any], environment: dict[str, Any], *, tunable: bool, host_name: str) -> Pinning:
    """The pinning of one launch (see Pinning); an empty Pinning for a profile that does not pin."""
    if params.get("tool", "fio") != "fio" or not params.get("pin_queue_cpus"):
        return Pinning(environment=environment)
    device = environment.get("device") or {}
    name = device.get("queue_name") or device.get("name") or ""
    cpus = _queue_cpus(device)
    if not cpus:
        return Pinning(refusal=_unreadable(environment, name))
    jobs = int(params.get("jobs") or 1)
    if jobs > len(cpus):
        online = environment.get("cpus")
        return Pinning(refusal=(
            f"the profile runs {jobs} fio jobs pinned to the CPUs of {name}'s blk-mq queues (pin_queue_cpus), but "
            f"those are {len(cpus)} CPU{'s' if len(cpus) != 1 else ''} ({cpu_list(cpus)}"
            f"{f'; the host has {online} online' if online else ''}), and with cpus_allowed_policy=split two jobs "
            f"would share a CPU. Lower the profile's jobs to {len(cpus)} or fewer, or untick “pin fio jobs to the "
            "queue CPUs” (pin_queue_cpus) on the profile."
        ))  # fmt: skip
    tunables, warnings, device = _rq_affinity(device, name, tunable=tunable, host_name=host_name)
    return Pinning(queue_cpus=cpu_list(cpus), tunables=tunables, warnings=warnings,
                   environment=environment | {"device": device})  # fmt: skip


def _queue_cpus(device: dict[str, Any]) -> set[int]:
    """Every CPU that serves one of the device's queues; empty when any queue's list is not a CPU list."""
    cpus: set[int] = set()
    for text in device.get("queue_cpus") or []:
        found = cpu_set(str(text))
        if found is None:
            return set()
        cpus |= found
    return cpus


def _unreadable(environment: dict[str, Any], name: str) -> str:
    why = environment.get("queue_unreadable") or (
        f"/sys/block/{name}/mq/*/cpu_list holds no CPU list (a device without blk-mq queues)"
        if name
        else "the probe found no block device under the target"
    )
    return (
        f"the profile pins fio jobs to the CPUs of the device's blk-mq queues (pin_queue_cpus), but the queues of "
        f"{environment.get('target') or 'the target'} could not be read: {why}. Untick “pin fio jobs to the queue "
        "CPUs” (pin_queue_cpus) on the profile, or run it on a block device, or a directory on one, whose "
        "/sys/block/<device>/mq/*/cpu_list the login user can read."
    )


def _rq_affinity(
    device: dict[str, Any], name: str, *, tunable: bool, host_name: str
) -> tuple[tuple[tuple[str, str], ...], list[str], dict[str, Any]]:
    """rq_affinity=2, set by the wrapper when the host is tunable and the login user may; otherwise the command a
    person can run. The device record says what was done (rq_affinity_set)."""
    current = device.get("rq_affinity")
    if current == WANTED_RQ_AFFINITY:
        return (), [], device
    if current is None or not _DEVICE_NAME.fullmatch(name):
        return (
            (),
            [f"rq_affinity of {name or 'the device'} could not be read; the pinned recipe wants it at 2."],
            device,
        )
    path = f"/sys/block/{name}/queue/rq_affinity"
    command = f"echo {WANTED_RQ_AFFINITY} | sudo tee {path}"
    if tunable and device.get("rq_affinity_writable"):
        warning = _set_warning(name, current, host_name)
        return ((path, str(WANTED_RQ_AFFINITY)),), [warning], device | {"rq_affinity_set": WANTED_RQ_AFFINITY}
    why = "the host is not marked tunable" if not tunable else "the login user may not write it"
    warning = (
        f"rq_affinity of {name} is {current}, not {WANTED_RQ_AFFINITY} as the pinned recipe wants; benchweb left it "
        f"alone ({why}). To set it, run as root on {host_name}: {command}"
    )
    return (), [warning], device


def _set_warning(name: str, before: Any, host_name: str) -> str:
    return (
        f"rq_affinity of {name} was {before}: benchweb set it to {WANTED_RQ_AFFINITY} just before fio started (the "
        f"host is marked tunable and the pinned recipe wants it). It stays so; to put it back, run as root on "
        f"{host_name}: echo {before} | sudo tee /sys/block/{name}/queue/rq_affinity"
    )


def tuning_failed(
    environment: dict[str, Any], warnings: list[str], log: str, *, host_name: str
) -> tuple[dict[str, Any], list[str]]:
    """A run whose wrapper could not set rq_affinity (its tuning.log says why): the environment no longer says it
    was set, and the run's warning says what happened instead of that it was done."""
    device = dict(environment.get("device") or {})
    device.pop("rq_affinity_set", None)
    name, before = device.get("queue_name") or device.get("name") or "", device.get("rq_affinity")
    done = _set_warning(name, before, host_name)
    failed = (
        f"rq_affinity of {name} stayed {before}: the write of {WANTED_RQ_AFFINITY} failed on the host "
        f"({log.strip()[:300]}), so fio ran without it. Run as root on {host_name}: echo {WANTED_RQ_AFFINITY} | "
        f"sudo tee /sys/block/{name}/queue/rq_affinity"
    )
    return environment | {"device": device}, [failed if warning == done else warning for warning in warnings]
