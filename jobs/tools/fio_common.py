"""What fio's job builder and its three output parsers share: rw modes, directions, errno messages (pure)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from jobs.tools.summary import ParseResult, finite

RW_MODES = ("read", "write", "randread", "randwrite", "rw", "randrw")
READ_ONLY_MODES = frozenset({"read", "randread"})
WRITE_ONLY_MODES = frozenset({"write", "randwrite"})
MIXED_MODES = frozenset({"rw", "readwrite", "randrw"})
DIRECTIONS = ("read", "write")
_ERRNO = re.compile(r"\berr=\s*([0-9]{1,9})/")
_ERROR_MESSAGE = re.compile(r"\berror=(.+)$")


def _mode_read_percent(rw: str | None, options: dict[str, str] | None) -> float | None:
    """The configured read share; options None means the mix is unknown (the text report omits it)."""
    mode = (rw or "read").split(":")[0]  # fio's default rw is read; "randread:8" carries an offset
    if mode in READ_ONLY_MODES:
        return 100.0
    if mode in WRITE_ONLY_MODES:
        return 0.0
    if mode not in MIXED_MODES or options is None:
        return None
    # fio refuses a mix outside 0-100, so such a value was not what ran: unknown rather than a guess.
    if "rwmixread" in options:
        read = finite(options["rwmixread"])
        return read if read is not None and 0 <= read <= 100 else None
    if "rwmixwrite" in options:
        write = finite(options["rwmixwrite"])
        return 100.0 - write if write is not None and 0 <= write <= 100 else None
    return 50.0


def _clock_ms(entries: list[tuple[Any, float]]) -> float:
    """Measured time of (groupid, runtime ms) entries: groups run one after another, jobs in a group together."""
    groups: dict[Any, float] = {}
    for group, runtime in entries:
        groups[group] = max(groups.get(group, 0.0), runtime)
    return sum(groups.values())


def _errno_messages(lines: list[str]) -> dict[int, str]:
    """errno -> fio's own wording, from lines like "fio: pid=7647, err=28/file:io_u.c:1876, ..., error=No space"."""
    messages: dict[int, str] = {}
    for line in lines:
        # Two searches, not one "err=.*?error=", which rescans the rest of the line from every "err=".
        errno = _ERRNO.search(line)
        message = _ERROR_MESSAGE.search(line, errno.end()) if errno else None
        if errno and message:
            messages.setdefault(int(errno[1]), message[1].strip())
    return messages


def checked_read_percent(
    percent: float | None, read: dict[str, Any] | None, write: dict[str, Any] | None, diagnostics: list[str]
) -> float | None:
    """The configured read share, unless the measured directions contradict it: a result that only wrote
    cannot have been configured to read 100 %. Then the share is unknown (None), and a diagnostic says why."""
    if (percent == 100.0 and write and not read) or (percent == 0.0 and read and not write):
        diagnostics.append(
            f"The job options give a read share of {percent:g} %, but the result {'wrote' if write else 'read'} "
            "only; the read share is left empty."
        )
        return None
    return percent


def part_labeller(keys: list[tuple[str | None, Any]]) -> Callable[[str | None, Any, str | None], str]:
    """ParseResult.label for each (client, group) of an output's keys: "" when there is one, else e.g.
    "group 1 (randwrite)", "client 10.0.0.5", "All clients, group 0"."""
    several = len(keys) > 1
    clients_vary = len({key[0] for key in keys}) > 1
    groups_vary = len({key[1] for key in keys}) > 1

    def label(client: str | None, group: Any, rw: str | None) -> str:
        if not several:
            return ""
        pieces = [client] if client is not None and clients_vary else []
        if groups_vary or not pieces:  # "or": several reports of one client and group
            pieces.append(f"group {group}" + (f" ({rw})" if rw else "") if client is None or pieces else client)
        return ", ".join(pieces)

    return label


def representative(results: list[ParseResult]) -> ParseResult:
    """The one result parse_output gives for an output holding several (detect.parse_all gives them all): the
    "All clients" total of client/server output, else the first group. Never a sum of groups, which ran one
    after another. Its diagnostics say which one it is."""
    if len(results) == 1:
        return results[0]
    chosen = next((r for r in results if r.label.startswith("All clients")), results[0])
    chosen.diagnostics.append(
        f"This output holds {len(results)} results ({'; '.join(r.label for r in results)}); this summary is "
        f"{chosen.label}'s. Importing it keeps each."
    )
    return chosen
