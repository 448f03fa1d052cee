"""What shapes a run's result besides the disk: the host's kernel, OS, fio, CPUs and memory, and the target
device's block queue (scheduler, nr_requests, rq_affinity, read-ahead, blk-mq queues and their CPUs) or the
filesystem a directory is on. Pure: no Django, no SSH.

`probe.py` builds the read-only probe sent with the preflight and reads its report; `chain.py` reads the devices
under the target's device from it (partition, device-mapper, md, down to the members); `changes.py` says what
differs between two runs' environments; `pinning.py` is the ESSD PL3 recipe (fio jobs pinned to the CPUs of the
device's queues, rq_affinity=2).
"""

from __future__ import annotations

from jobs.environment.chain import chain_devices, chain_of
from jobs.environment.changes import consecutive_changes, environment_changes, facts
from jobs.environment.pinning import Pinning, tuning_failed
from jobs.environment.pinning import plan as pinning_plan
from jobs.environment.probe import parse_report, probe_script

__all__ = [
    "Pinning",
    "chain_devices",
    "chain_of",
    "consecutive_changes",
    "environment_changes",
    "facts",
    "parse_report",
    "pinning_plan",
    "probe_script",
    "tuning_failed",
]
