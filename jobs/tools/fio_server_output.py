"""The output of fio's client driving a group's servers (jobs/runs/driving.py), read back a member at a time (pure):
`member_output` cuts each member's part out of the client's JSON as a fio output of its own, its numbers as fio
printed them; `client_messages` gives what the client printed for each member; `iops_samples` reads the per-second
IOPS log the member's job file asked for (jobs/remote/fio_server.py `client_job`)."""

from __future__ import annotations

import json
import re
from typing import Any

from jobs.tools.fio_json_documents import fio_json_documents
from jobs.tools.summary import ParseError


def member_output(text: str, names: list[str]) -> dict[str, str]:
    """Each member's part of the client's JSON output (its `client_stats` entries, named by job), as a fio JSON
    output of its own with fio's figures as printed; a member fio reported nothing for is missing. The text fio's
    client printed around the JSON (each line "<socket> message") is not part of any."""
    try:
        docs, _ = fio_json_documents(text)
    except ParseError:
        return {}
    if not docs or not isinstance(docs[-1].get("client_stats"), list):
        return {}
    doc = docs[-1]
    head = {key: value for key, value in doc.items() if key not in ("client_stats", "disk_util")}
    parts: dict[str, str] = {}
    for name in names:
        entries = [_own_entry(e) for e in doc["client_stats"] if isinstance(e, dict) and e.get("jobname") == name]
        if entries:
            parts[name] = _dump(head | {"jobs": entries}) + "\n"
    return parts


def _own_entry(entry: dict[str, Any]) -> dict[str, Any]:
    """A client's entry as a job of its own: the client's name and port (the socket) said nothing of the disk."""
    return {key: value for key, value in entry.items() if key not in ("hostname", "port")}


def client_messages(text: str, sockets: dict[str, str]) -> dict[str, str]:
    """What fio's client printed for each member (lines "<m1.sock> fio: …"), keyed by socket name."""
    said: dict[str, list[str]] = {name: [] for name in sockets}
    for line in text.splitlines():
        match = re.match(r"<([^>\n]+)> ?(.*)", line)
        if match and match[1] in said and match[2].strip():
            said[match[1]].append(match[2])
    return {name: "\n".join(lines) for name, lines in said.items()}


def iops_samples(log: str) -> tuple[float | None, list[dict[str, float | None]]]:
    """The job's start (epoch seconds, its host's clock) and its per-second samples ({t_s, read_iops, write_iops})
    from fio's IOPS log with log_unix_epoch (time in ms, value, direction 0 read 1 write 2 trim, …). The first
    entry closes the first second: the job started a second before it. (None, []) when the log has no entry."""
    seconds: dict[int, dict[str, float | None]] = {}
    first: int | None = None
    for line in log.splitlines():
        fields = [field.strip() for field in line.split(",")]
        if len(fields) < 3 or not all(f.lstrip("-").isdigit() for f in fields[:3]):
            continue
        at, value, direction = int(fields[0]), int(fields[1]), int(fields[2])
        if direction not in (0, 1):
            continue
        first = at if first is None else min(first, at)
        seconds.setdefault(at, {"read_iops": None, "write_iops": None})[("read_iops", "write_iops")[direction]] = value
    if first is None:
        return None, []
    start_ms = first - 1000
    samples: list[dict[str, float | None]] = [
        {"t_s": round((at - start_ms) / 1000, 3), **rates} for at, rates in sorted(seconds.items())
    ]
    return start_ms / 1000, samples


def _dump(value: Any) -> str:
    """JSON with each number as fio printed it (the decoder keeps the text of the last document's numbers)."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(str(k))}: {_dump(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_dump(v) for v in value) + "]"
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return json.dumps(value)
    text = getattr(value, "text", None)
    return text if isinstance(text, str) else json.dumps(value)
