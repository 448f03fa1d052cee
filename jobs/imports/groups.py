"""An output of fio --client imported as a synchronised group: one RunSet of kind group (trigger import) whose
members are the clients, each a finished run on the disk chosen for it (docs/user-guide/imports.md).

The steps:

1. The output is read as the single import reads it (importing.parse_results: the same formats and refusals) and
   must be fio client/server output (jobs/tools/fio_clients.py) of 2 to 100 clients, each with one finished
   measurement of one fio group: anything else is refused whole, naming the field and the fix, and nothing is
   stored.
2. Each client's disk is the one chosen for it, or else the team's only disk on the host whose name or address is
   the client's host name as fio printed it (fio's text report prints none: choose each disk). Each client needs a
   disk of its own.
3. One transaction stores the group, one succeeded member a client (as the single import stores a run, with
   run_set and set_index), and ends it as a group that ran ends (jobs/sets/advancing.py: its result from
   jobs/sets/group_result.py). fio's output holds no client's start: the members are taken to have started
   together, when fio's client started them, and each to have run its own runtime; the group's start spread, its
   windows and the totals over them are therefore left empty, with the reason. fio's own "All clients" total is
   kept beside benchweb's sum of the clients, and the result says whether they agree.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from jobs import errors, figures
from jobs.imports import importing
from jobs.models import Disk, Run, RunSet, Team
from jobs.sets import advancing, requesting
from jobs.tools import fio_clients
from jobs.tools.fio_json_documents import fio_json_documents
from jobs.tools.summary import ParseError, ParseResult

STARTS_UNKNOWN = (
    "start spread not known: fio's client/server output gives no client's start, so the members are taken to have "
    "started together, as fio's client started them"
)

WINDOWS_UNKNOWN = (
    "not known: fio's client/server output gives no client's start or end, only each client's runtime, so the "
    "window cannot be placed"
)


class GroupImportRefused(errors.FieldRefused):
    """The output cannot be imported as a group; the message names what and the fix. Nothing was stored."""


@dataclass(frozen=True)
class Planned:
    """A client/server output read and its disks chosen: what the confirmation shows and the import stores."""

    name: str
    text: str
    run: fio_clients.ClientRun
    disks: tuple[Disk | None, ...]  # one a client; None: none chosen and none matched by its host name
    matched: tuple[bool, ...]  # the disk was matched by the client's host name, not chosen

    @property
    def workload(self) -> str:
        """The workload the clients' outputs state ('randread 4k'); each one when their job files differ."""
        named = [
            figures.workload_name(c.result.summary.get("workload"), c.result.summary.get("block_size_bytes"))
            for c in self.run.clients
        ]
        return " / ".join(dict.fromkeys(name or "workload not stated" for name in named))

    @property
    def set_name(self) -> str:
        """'randread 4k QD1 · 2 fio clients', the group's profile_name."""
        return f"{self.workload} · {len(self.run.clients)} fio clients"[:100]

    @property
    def clients_sum(self) -> dict[str, float]:
        """benchweb's total: each client's own IOPS and bytes/s (what its run's page shows), added up."""
        totals = [client.result.summary.get("total") or {} for client in self.run.clients]
        return {key: sum(float(t.get(key) or 0.0) for t in totals) for key in ("iops", "bw_bytes_per_s")}

    @property
    def fio_total(self) -> dict[str, Any]:
        """fio's own "All clients" total, as the group's result keeps it beside benchweb's."""
        return fio_total(self.run, self.clients_sum)

    def notes(self) -> list[str]:
        """What fio's output leaves unsaid of its clients, as the parsers noticed it: no host names (fio#515), a
        text report that names no client."""
        said = [d for c in self.run.clients for d in c.result.diagnostics if "client" in d]
        return list(dict.fromkeys(said))


def read_clients(name: str, text: str, tool: str = "auto") -> fio_clients.ClientRun:
    """The clients of a fio --client output; GroupImportRefused names what is not a group of finished clients."""
    try:
        results = importing.parse_results(text, tool)
    except ParseError as exc:
        raise GroupImportRefused("text", f"{name}: {exc}") from exc
    fmt = results[0].format
    run = fio_clients.client_run(results, client_output=fmt == "fio-json" and '"client_stats"' in text)
    if run is None or not fmt.startswith("fio"):
        raise GroupImportRefused(
            "text",
            f'{name} is not the output of fio --client: its JSON has no "client_stats" and its text report no '
            "“All clients” section. Import it with Import results (one run a result), or as a sweep.",
        )
    _check(name, run)
    return run


def _check(name: str, run: fio_clients.ClientRun) -> None:
    count = len(run.clients)
    if run.groups > 1:
        raise GroupImportRefused(
            "text",
            f"{name}: each client ran {run.groups} fio groups (stonewall or new_group), one after another; a group "
            "import takes one measurement a client. Import it with Import results, which keeps each group of each "
            "client as a run of its own.",
        )
    if not requesting.GROUP_MIN_MEMBERS <= count <= requesting.GROUP_MAX_MEMBERS:
        bounds = f"{requesting.GROUP_MIN_MEMBERS} to {requesting.GROUP_MAX_MEMBERS}"
        raise GroupImportRefused(
            "text",
            f"{name} holds {count} client{'s' if count != 1 else ''}; a group has {bounds} members, one a client. "
            "fio runs a job file given once at the end of the command on the last --client only: give it after each "
            "(`fio --client=a job.fio --client=b job.fio`), or import this output with Import results.",
        )
    for client in run.clients:
        result = client.result
        if result.job_errors:
            error = result.job_errors[0]
            raise GroupImportRefused(
                "text",
                f"{name}: {client.called} reports error {error['errno']} in job {error['job']}: a group import "
                "stores finished measurements. Import the output with Import results, which stores each client as a "
                "run of its own (that one as failed).",
            )
        if result.partial:
            raise GroupImportRefused("text", f"{name}: {client.called} is an excerpt ({result.partial}): give the "
                                             "whole output.")  # fmt: skip


def matching_disk(team: Team, host: str | None) -> Disk | None:
    """The team's only disk on the only host named or addressed `host` (case aside); None when there is not
    exactly one."""
    if not host:
        return None
    hosts = team.hosts.filter(Q(name__iexact=host) | Q(address__iexact=host))
    if hosts.count() != 1:
        return None
    disks = list(Disk.objects.filter(team=team, host__in=hosts).select_related("host")[:2])
    return disks[0] if len(disks) == 1 else None


def plan(team: Team, name: str, text: str, chosen: Sequence[Disk | None] = (), tool: str = "auto") -> Planned:
    """The output read and each client's disk: the one chosen (in client order), else the one its host name
    matches (None: neither)."""
    run = read_clients(name, text, tool)
    if chosen and len(chosen) != len(run.clients):
        raise GroupImportRefused(
            "disks",
            f"{len(chosen)} disk{'s were' if len(chosen) != 1 else ' was'} given for the {len(run.clients)} clients of "
            f"{name}; give one a client, in fio's order ({', '.join(c.called for c in run.clients)}), or none to "
            "match each by its host name.",
        )
    given = list(chosen) or [None] * len(run.clients)
    disks = [disk or matching_disk(team, client.host) for disk, client in zip(given, run.clients, strict=True)]
    matched = [disk is None and found is not None for disk, found in zip(given, disks, strict=True)]
    return Planned(name, text, run, tuple(disks), tuple(matched))


def refusal(planned: Planned) -> GroupImportRefused | None:
    """Why the planned group cannot be stored as it stands: a client without a disk, a disk given twice, a client
    already stored on its disk."""
    for client, disk in zip(planned.run.clients, planned.disks, strict=True):
        if disk is None:
            where = f"no host of yours is named or addressed {client.host} with one disk" if client.host else (
                "fio printed no host name for it")  # fmt: skip
            return GroupImportRefused("disks", f"{client.called} has no disk: none was chosen, and {where}. Choose its "
                                               "disk.")  # fmt: skip
    twice = [str(disk) for disk, count in Counter(planned.disks).items() if count > 1]
    if twice:
        return GroupImportRefused("disks", f"Disk {', '.join(twice)} is chosen for several clients; each member of a "
                                           "group is on a disk of its own: choose one disk a client.")  # fmt: skip
    for client, disk in zip(planned.run.clients, planned.disks, strict=True):
        assert disk is not None  # checked above
        # A client's measurement is stored once in the team, on whichever disk: the same output imported again on
        # other disks would count one run of fio twice.
        key = importing.fingerprint(planned.text, client.result.label)
        found = Run.objects.filter(disk__team_id=disk.team_id, import_fingerprint=key).select_related("disk__host")
        first = found.order_by("pk").first()
        if first is not None:
            return GroupImportRefused(
                "text",
                f"{client.called} of {planned.name} is already stored on {first.disk} as run {first.pk}; nothing was "
                "stored. Open that run, or import another output.",
            )
    return None


def import_group(planned: Planned, *, at: Any = None, user: Any = None) -> RunSet:
    """Store the planned group, all or nothing; GroupImportRefused (or DuplicateImport, when a client was stored
    meanwhile) says why nothing was stored."""
    finished = at or timezone.now()
    if finished < importing.EARLIEST_IMPORT:
        raise errors.FieldRefused("finished_at", f"{finished.isoformat()} is before 1970: give when the run finished.")
    if problem := refusal(planned):
        raise problem
    disks = [disk for disk in planned.disks if disk is not None]
    with transaction.atomic():
        # As the single import: one import of a disk at a time, so the same output saved twice is stored once.
        list(Disk.objects.select_for_update(no_key=True).filter(pk__in=[d.pk for d in disks]).values_list("pk"))
        return _store(planned, disks, finished=finished, user=user)


def _store(planned: Planned, disks: list[Disk], *, finished: datetime, user: Any) -> RunSet:
    clients = planned.run.clients
    run_set = RunSet.objects.create(
        kind=RunSet.Kind.GROUP,
        disk=disks[0],
        profile_name=planned.set_name,
        base_parameters=_base_parameters(clients[0].result, len(clients)),
        plan={"disks": [disk.pk for disk in disks], "clients": [c.called for c in clients], "source": "fio --client"},
        trigger=Run.Trigger.IMPORT,
        created_by=user if getattr(user, "is_authenticated", False) else None,
        explanation="importing",
    )
    runtimes = [timedelta(seconds=c.result.summary.get("runtime_s") or 0) for c in clients]
    start = finished - max(runtimes)  # together, as fio's client started them; the longest ends at `finished`
    members = [
        importing.store_result(
            disk, planned.text, client.result, name=planned.name, finished=start + runtime, user=user,
            member=importing.Member(run_set, index, {}),
        )
        for index, (client, disk, runtime) in enumerate(zip(clients, disks, runtimes, strict=True))
    ]  # fmt: skip
    advancing.advance(run_set.pk)
    run_set.refresh_from_db()
    result = _imported_result(run_set.result or {}, planned, members)
    comparison = result["fio_total"]["why"]
    RunSet.objects.filter(pk=run_set.pk).update(
        started_at=start,
        finished_at=finished,
        result=result,
        explanation=f"imported from fio --client output {planned.name}, {len(members)} clients; "
        f"{run_set.explanation}; {comparison}",
    )
    run_set.refresh_from_db()
    return run_set


def _imported_result(result: dict[str, Any], planned: Planned, members: list[Run]) -> dict[str, Any]:
    """group_result's result with what an import does not know left empty, and fio's own total beside benchweb's."""
    result = dict(result)
    result["start_spread"] = {"spread_s": None, "uncertainty_s": None, "first": None, "last": None,
                              "text": STARTS_UNKNOWN}  # fmt: skip
    result["offsets"] = _clock_note(planned.text)
    windows = dict(result.get("windows") or {})
    result["windows"] = {key: None for key in windows} | {"why": STARTS_UNKNOWN}
    totals = dict(result.get("totals") or {})
    unknown: dict[str, Any] = {"window": None, "iops": None, "bytes_per_s": None, "members": {}, "why": WINDOWS_UNKNOWN}
    for name in ("all_running", "span"):
        if name in totals:
            totals[name] = dict(totals[name]) | unknown
    result["totals"] = totals
    result["fio_total"] = planned.fio_total
    result["clients"] = [
        {"member": f"member {index + 1}", "client": client.called, "label": client.result.label,
         "host": client.host, "run": member.pk, "disk": member.disk_id, "matched_by_host": matched}
        for index, (client, member, matched) in enumerate(zip(planned.run.clients, members, planned.matched,
                                                               strict=True))
    ]  # fmt: skip
    result["notes"] = planned.notes()
    return result


def fio_total(run: fio_clients.ClientRun, ours: dict[str, float]) -> dict[str, Any]:
    """fio's "All clients" entry in the shape of the group's other totals, its `why` comparing it with benchweb's
    sum of the clients (or saying fio printed none)."""
    what = "fio's own “All clients” total"
    if run.fio_total is None:
        return {"what": what, "window": None, "iops": None, "bytes_per_s": None, "members": {}, "printed": None,
                "why": "fio printed no “All clients” total (fio#1881: several job sections a client can leave it "
                       "out): benchweb's sum of the clients stands alone."}  # fmt: skip
    summary = run.fio_total.summary
    total = summary.get("total") or {}
    longest = max((c.result.summary.get("runtime_s") or 0.0) for c in run.clients) or None
    return {
        "what": what, "window": None, "iops": total.get("iops"), "bytes_per_s": total.get("bw_bytes_per_s"),
        "members": {}, "printed": summary.get("printed"), "runtime_s": summary.get("runtime_s"),
        "why": fio_clients.total_comparison(total.get("iops"), ours["iops"], longest),
    }  # fmt: skip


def _clock_note(text: str) -> str:
    """What is known of when the clients ran: fio's JSON "timestamp" is its client's clock when it began (whole
    seconds), before the servers set up and ran the job; the text report has no date with a zone."""
    stamp = fio_timestamp(text)
    began = f"; fio's client began at {stamp.strftime('%Y-%m-%d %H:%M:%S UTC')} by its own clock (“timestamp”)" if (
        stamp) else ""  # fmt: skip
    return f"imported: the members' starts are not in fio's output{began}"


def fio_timestamp(text: str) -> datetime | None:
    """fio JSON's top-level "timestamp" (epoch seconds), None when the output has none."""
    try:
        docs, _ = fio_json_documents(text)
    except ParseError:
        return None
    stamp = docs[-1].get("timestamp") if docs else None
    if isinstance(stamp, bool) or not isinstance(stamp, int) or not 0 < stamp < 2**37:
        return None
    return datetime.fromtimestamp(stamp, tz=UTC)


def _base_parameters(result: ParseResult, clients: int) -> dict[str, Any]:
    """The first client's parameters in the shape of Profile.parameters() where the output states them."""
    summary = result.summary
    stated = summary.get("workload") or {}
    return {
        "tool": summary.get("tool"), "rw": stated.get("rw"), "block_size_bytes": summary.get("block_size_bytes"),
        "iodepth": stated.get("iodepth"), "jobs": stated.get("numjobs"), "runtime_s": summary.get("runtime_s"),
        "direct": summary.get("direct"), "read_percent": summary.get("read_percent"),
        "ioengine": stated.get("ioengine"), "format": result.format, "source": "import", "clients": clients,
    }  # fmt: skip
