"""The environment probe: the read-only sh script sent with a run's preflight, and its report read back (pure).

The script is `probe.sh` beside this module. It prints one `key=value` per line between
`benchweb_environment=1` and `end=1`; `parse_report` turns that into the dict stored on Run.environment:

    kernel, kernel_build, os, fio, cpu_model, cpus_online   text as the host printed it
    cpus, mem_total_kb                                       numbers
    target                                                   the target path as the host resolved it
    filesystem   {type, source, mount, options}              directory targets (findmnt -T)
    device       {name, partition_of, dm_name, model, size_bytes, scheduler, nr_requests, rq_affinity,
                  rq_affinity_writable, read_ahead_kb, rotational, queues, queue_cpus: [list per queue],
                  chain: {top, label, nodes, members, text, truncated}}
                                                             the block device (under a directory: its source);
                                                             chain: the devices under it (chain.py)
    queue_unreadable                                         why the device's queues could not be read
    instance_type                                            only when the host's cloud_metadata switch is on
    complete                                                 header and end marker seen

A key the host did not print is absent: nothing is guessed.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

from jobs import paths
from jobs.environment.chain import parse_chain
from jobs.probe_report import report_pairs

PROBE_PATH = Path(__file__).with_name("probe.sh")
KINDS = ("directory", "block")

# Text values are kept whole up to this length: enough for any kernel build string or mount options.
MAX_TEXT = 500


def _probe_parts() -> tuple[str, str, str]:
    """The prelude, the body and the cloud part of probe.sh, without its header and the "#@" marker lines."""
    _header, prelude, body, cloud = re.split(r"^#@.*\n", PROBE_PATH.read_text(encoding="utf-8"), flags=re.MULTILINE)
    return prelude, body, cloud


_PRELUDE, _BODY, _CLOUD = _probe_parts()


def probe_script(target_path: str, kind: str, *, cloud_metadata: bool = False) -> str:
    """The sh probe for one target; the path goes through shlex.quote exactly once. The cloud metadata service is
    asked only with `cloud_metadata` (Host.cloud_metadata): otherwise its address is not even in the script."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, not {kind!r}")
    head = _PRELUDE + f"kind={shlex.quote(kind)}\n"
    if paths.problem(target_path):
        # The safety probe refuses such a path and says why; here the host's own facts are still worth having.
        head += "t=\n"
    else:
        head += f"t={shlex.quote(target_path)}\n"
    return head + _BODY + (_CLOUD if cloud_metadata else "") + "say end 1\n"


# ----------------------------------------------------------------------------------------- the report


def report_lines(text: str) -> tuple[list[tuple[str, str]], bool]:
    """(key, value) pairs in order, and whether the report was complete (header and end marker seen)."""
    return report_pairs(text, "benchweb_environment=1")


_TEXT_KEYS = ("kernel", "kernel_build", "os", "fio", "cpu_model", "cpus_online", "target", "queue_unreadable",
              "instance_type")  # fmt: skip
_NUMBER_KEYS = ("cpus", "mem_total_kb")
_DEVICE_TEXT = {"dev_name": "name", "dev_queue_name": "queue_name", "dev_partition_of": "partition_of",
                "dev_dm_name": "dm_name", "dev_model": "model"}  # fmt: skip
_DEVICE_NUMBERS = {"dev_nr_requests": "nr_requests", "dev_rq_affinity": "rq_affinity", "dev_queues": "queues",
                   "dev_read_ahead_kb": "read_ahead_kb", "dev_rotational": "rotational"}  # fmt: skip
# A number from the host is ASCII digits and nothing else: int() would also take "٣", " 1_0 " or "+1".
_INT = re.compile(r"[0-9]{1,18}")


def parse_report(text: str) -> dict[str, Any]:
    """The environment as a dict (see the module's docstring); an empty report gives {"complete": False}."""
    pairs, complete = report_lines(text)
    found: dict[str, Any] = {}
    device: dict[str, Any] = {}
    queue_cpus: list[tuple[int, str]] = []
    chain = parse_chain(pairs)
    for key, value in pairs:
        value = value.strip()
        if key in _TEXT_KEYS and value:
            found.setdefault(key, value[:MAX_TEXT])
        elif key in _NUMBER_KEYS and _INT.fullmatch(value):
            found.setdefault(key, int(value))
        elif key == "fs":
            found.setdefault("filesystem", _filesystem(value))
        elif key in _DEVICE_TEXT and value:
            device.setdefault(_DEVICE_TEXT[key], value[:MAX_TEXT])
        elif key in _DEVICE_NUMBERS and _INT.fullmatch(value):
            device.setdefault(_DEVICE_NUMBERS[key], int(value))
        elif key == "dev_size_sectors" and _INT.fullmatch(value):
            device.setdefault("size_bytes", int(value) * 512)
        elif key == "dev_scheduler":
            device.setdefault("scheduler", selected_scheduler(value))
        elif key == "dev_rq_affinity_writable":
            device.setdefault("rq_affinity_writable", value == "yes")
        elif key == "dev_queue_cpus":
            queue, _, cpus = value.partition(":")
            if _INT.fullmatch(queue):
                queue_cpus.append((int(queue), cpus.strip()[:MAX_TEXT]))
    if device:
        # mq/0, mq/1, ... mq/10: in the queues' own order, not the shell's glob order.
        device["queue_cpus"] = [cpus for _queue, cpus in sorted(queue_cpus)]
        if chain:
            device["chain"] = chain
        found["device"] = {key: value for key, value in device.items() if value is not None}
    return found | {"complete": complete}


def selected_scheduler(text: str) -> str | None:
    """The scheduler in [brackets] of /sys/block/X/queue/scheduler ("none [mq-deadline] kyber"); a lone word is the
    one there is ("none" on a device without a choice); anything else is not a scheduler benchweb can name."""
    chosen: list[str] = re.findall(r"\[([A-Za-z0-9_-]+)\]", text)
    if len(chosen) == 1:
        return chosen[0]
    words = text.split()
    return words[0] if len(words) == 1 and re.fullmatch(r"[A-Za-z0-9_-]+", words[0]) else None


def _filesystem(line: str) -> dict[str, str]:
    """findmnt -r's FSTYPE SOURCE TARGET OPTIONS: blanks inside a value are escaped as \\xNN, so the line splits at
    its spaces into exactly those four; anything else is kept as it came, under `raw`."""
    fields = line.split(" ")
    if len(fields) != 4:
        return {"raw": line[:MAX_TEXT]}
    unescaped = [_unescape_hex(field)[:MAX_TEXT] for field in fields]
    return dict(zip(("type", "source", "mount", "options"), unescaped, strict=True))


def _unescape_hex(text: str) -> str:
    return re.sub(r"\\x([0-9a-fA-F]{2})", lambda m: chr(int(m.group(1), 16)), text)
