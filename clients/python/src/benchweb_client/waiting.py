"""Waiting for runs: poll each until it is final, with a progress line per run on stderr (redrawn on a terminal,
a line every few seconds otherwise), and on Ctrl-C cancel the runs still going, wait for them to end, and say so."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TextIO

from benchweb_client import gates

Fetch = Callable[[int], dict[str, Any]]
# The runs still going, as the runs list gives them (id -> state, progress, explanation, final): one request a
# poll for them all, however many there are.
FetchGoing = Callable[[list[int]], dict[int, dict[str, Any]]]


def progress_line(name: str, run: dict[str, Any]) -> str:
    progress = run.get("progress") or {}
    parts = [f"disk {name}: run {run['id']} {run['state']}"]
    iops = [progress.get("read_iops"), progress.get("write_iops")]
    if any(v is not None for v in iops) and not run.get("final"):
        parts.append(f"{gates.iops_text(sum(v or 0 for v in iops))} IOPS so far")
    if run.get("final") and gates.total_iops(run) is not None:
        parts.append(f"{gates.iops_text(gates.total_iops(run) or 0)} IOPS")
    if progress.get("phase") == "precondition":
        parts.append("preconditioning")
    if (eta := progress.get("eta_s")) is not None and not run.get("final"):
        parts.append(f"ETA {duration(float(eta))}")
    elif not run.get("final") and run.get("explanation") and run["explanation"] != run["state"]:
        parts.append(str(run["explanation"])[:100])
    return ", ".join(parts)


def duration(seconds: float) -> str:
    seconds = max(0, round(seconds))
    return f"{seconds // 60} min {seconds % 60:02d} s" if seconds >= 60 else f"{seconds} s"


class Board:
    """The progress lines on stderr: on a terminal redrawn in place, else printed every `every` seconds."""

    def __init__(self, out: TextIO, tty: bool, every: float) -> None:
        self.out, self.tty, self.every = out, tty, every
        self._drawn = 0
        self._last: float | None = None  # the first lines are printed at once

    def show(self, lines: list[str], force: bool = False) -> None:
        if self.tty:
            if self._drawn:
                self.out.write(f"\x1b[{self._drawn}F")
            self.out.write("".join(f"\x1b[2K{line}\n" for line in lines))
            self._drawn = len(lines)
        elif force or self._last is None or time.monotonic() - self._last >= self.every:
            self.out.write("".join(f"{line}\n" for line in lines))
            self._last = time.monotonic()
        self.out.flush()

    def say(self, text: str) -> None:
        self._drawn = 0  # a message ends the redrawn block: the next lines start below it
        self.out.write(text + "\n")
        self.out.flush()


def wait(
    runs: dict[int, dict[str, Any]],
    names: dict[int, str],
    fetch: Fetch,
    fetch_going: FetchGoing,
    board: Board,
    poll_s: float,
) -> None:
    """Poll until every run is final; `runs` (id -> the run) is updated in place, so on KeyboardInterrupt the
    caller knows which are still going. The runs going are read together each poll (fetch_going); a run is read
    whole (fetch: its result, which the gates judge) once, when it has ended."""
    while True:
        going = [run_id for run_id, run in runs.items() if not run.get("final")]
        listed = fetch_going(going) if going else {}
        for run_id in going:
            row = listed.get(run_id)
            runs[run_id] = fetch(run_id) if row is None or row.get("final") else runs[run_id] | row
        done = all(run.get("final") for run in runs.values())
        board.show([progress_line(names[i], runs[i]) for i in runs], force=done)
        if done:
            return
        time.sleep(poll_s)


def cancel_all(
    runs: dict[int, dict[str, Any]],
    names: dict[int, str],
    cancel: Callable[[int], Any],
    fetch_going: FetchGoing,
    board: Board,
    timeout_s: float,
    stopped_by: str = "Ctrl-C",
) -> list[str]:
    """Cancel every run not yet final, then wait (up to timeout_s) for each to leave running, reading the runs
    still stopping in one request a poll; what happened to each, one line a run."""
    going = asked = [i for i, run in runs.items() if not run.get("final")]
    for run_id in asked:
        cancel(run_id)
    them = "them" if len(going) != 1 else "it"
    board.say(
        f"benchweb: {stopped_by}: cancelling {len(going)} run{'s' * (len(going) != 1)} and waiting for {them} to stop"
    )
    deadline = time.monotonic() + timeout_s
    while going and time.monotonic() < deadline:
        listed = fetch_going(going)  # the runs still stopping, read together
        for run_id in going:
            runs[run_id] = runs[run_id] | listed.get(run_id, {})
        going = [i for i in going if not runs[i].get("final")]
        if going:
            time.sleep(0.5)
    return [
        f"disk {names[i]}: run {i} {runs[i]['state']}" + ("" if runs[i].get("final") else " (still stopping)")
        for i in asked
    ]
