"""fio's client/server output read as one measurement a client, beside fio's own "All clients" total (pure).

fio --client runs one job on several servers at once and prints each client's results, then (usually) an "All
clients" entry summing them (docs/reference/fio-output.md#client-and-server-mode). The JSON and text parsers give one
result per client and group (fio_json.py, fio_text.py); this module tells whether an output is such a run, which
result is which client and which is fio's total, and how fio's total compares with the sum of the clients.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from jobs.tools.summary import ParseResult

ALL_CLIENTS = "All clients"
# "client 10.0.0.5", "client db-1:8765" (two servers on one host), "client 2" (numbered: no host name printed).
_CLIENT_LABEL = re.compile(r"client (?P<name>.+?)(?::(?P<port>[0-9]{1,5}))?")
_NUMBERED = re.compile(r"[0-9]{1,3}")
# fio prints IOPS to three significant digits ("IOPS=36.4k"); JSON's figures to six decimals. Totals closer than
# this share of each other are the same figure; further apart, both are shown and the difference named.
SAME_TOTAL = 0.0005


@dataclass(frozen=True)
class Client:
    """One client of the run: its place in fio's output, the host fio named (None: not printed), its result."""

    number: int  # from 1, in the order fio printed the clients
    label: str
    host: str | None
    port: str | None
    result: ParseResult

    @property
    def called(self) -> str:
        """'client 2 (10.0.0.5)', as refusals and the confirmation name it."""
        return f"client {self.number}" + (f" ({self.host}{f':{self.port}' if self.port else ''})" if self.host else "")


@dataclass(frozen=True)
class ClientRun:
    """An output of fio --client: its clients in fio's order and fio's own total (None when fio printed none)."""

    clients: tuple[Client, ...]
    fio_total: ParseResult | None
    groups: int  # fio groups (stonewall, new_group) a client ran; a group import takes one


def is_client_result(result: ParseResult) -> bool:
    return result.label == ALL_CLIENTS or result.label.startswith(("client ", f"{ALL_CLIENTS},"))


def client_run(results: list[ParseResult], *, client_output: bool) -> ClientRun | None:
    """The clients and fio's total among an output's results; None when it is not fio --client output.

    client_output says the output itself is client/server output (a JSON "client_stats"), which a run of one
    client does not show in its labels."""
    if not client_output and not any(is_client_result(r) for r in results):
        return None
    totals = [r for r in results if r.label.startswith(ALL_CLIENTS)]
    mine = [r for r in results if not r.label.startswith(ALL_CLIENTS)]
    groups = len(totals) if len(totals) > 1 else _groups(mine)
    clients = tuple(_client(number, result) for number, result in enumerate(mine, 1))
    return ClientRun(clients, totals[0] if len(totals) == 1 else None, groups)


def _groups(results: list[ParseResult]) -> int:
    named = {label.rsplit(", group ", 1)[1] for r in results if ", group " in (label := r.label)}
    return max(1, len(named))


def _client(number: int, result: ParseResult) -> Client:
    match = _CLIENT_LABEL.fullmatch(result.label.split(", group ")[0])
    if match is None or _NUMBERED.fullmatch(match["name"]) or match["name"] == "None":
        return Client(number, result.label, None, None, result)
    return Client(number, result.label, match["name"], match["port"], result)


def total_comparison(fio_iops: float | None, our_iops: float | None, longest_s: float | None) -> str:
    """What fio's "All clients" IOPS and benchweb's sum of the clients' own IOPS say of each other, in words."""
    if fio_iops is None or our_iops is None:
        return ""
    if abs(fio_iops - our_iops) <= SAME_TOTAL * max(fio_iops, our_iops):
        return "fio's “All clients” total and the sum of the clients agree."
    share = (fio_iops - our_iops) / our_iops * 100 if our_iops else 0.0
    longest = f" ({longest_s:g} s)" if longest_s else ""
    return (
        f"fio's “All clients” total is {abs(share):.2f} % {'above' if share > 0 else 'below'} the sum of the "
        f"clients: fio divides all the clients' I/Os by the longest client's runtime{longest}, benchweb adds each "
        "client's own rate; some fio releases also miscount the total (fio#1918)."
    )
