"""Why a disk is not free for a run: another run active on it, its host running one benchmark at a time and busy,
or a set of runs holding it. One answer for the three places that claim disks: one run (states.claim), a group's
members together (states.claim_group) and the beat tick's every due run (queueing.dispatch_due).

`Occupancy.of` reads what holds the disks asked about in three queries and locks their exclusive hosts' rows (so
two disks of one exclusive host are never claimed at once); `why` answers for one disk, and `take` marks a disk
(and its exclusive host) taken by a run claimed in the same pass, so the next run asking sees it busy."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from jobs.models import Host, Run, RunSet


@dataclass(frozen=True)
class Place:
    """Where a run would go: its disk, and its host (with its name, and whether it runs one benchmark at a time)."""

    disk: int
    host: int
    host_name: str
    exclusive: bool

    @classmethod
    def of_run(cls, run: Run) -> Place:
        host = run.disk.host
        return cls(run.disk_id, host.pk, host.name, host.exclusive)


@dataclass
class Occupancy:
    """What holds the disks looked at: the active run on each busy disk and on each busy exclusive host, and the
    running set holding each held disk (its kind and id)."""

    on_disks: dict[int, int] = field(default_factory=dict)
    on_hosts: dict[int, int] = field(default_factory=dict)
    held: dict[int, tuple[str, int]] = field(default_factory=dict)

    @classmethod
    def of(cls, places: Iterable[Place], *, own_set: int | None = None) -> Occupancy:
        """Read what holds `places` now, their exclusive hosts locked for the rest of the transaction; the set
        `own_set` (the asking run's own) holds nothing against its members."""
        places = list(places)
        disks = sorted({place.disk for place in places})
        exclusive = sorted({place.host for place in places if place.exclusive})
        if exclusive:
            list(Host.objects.select_for_update().filter(pk__in=exclusive).order_by("pk").values_list("pk"))
        active = Run.objects.filter(state__in=Run.ACTIVE_STATES).order_by("pk")
        holders = RunSet.objects.filter(disk_id__in=disks, state=RunSet.State.RUNNING).order_by()
        if own_set is not None:
            holders = holders.exclude(pk=own_set)
        return cls(
            on_disks=_first_of(active.filter(disk_id__in=disks).values_list("disk_id", "pk")),
            on_hosts=_first_of(active.filter(disk__host_id__in=exclusive).values_list("disk__host_id", "pk")),
            held={disk: (kind, pk) for disk, kind, pk in holders.values_list("disk_id", "kind", "pk")},
        )

    def why(self, place: Place) -> str | None:
        """Why a run may not take `place`'s disk now ("waiting: disk busy with run 12", "waiting: host db-1 runs one
        benchmark at a time; busy with run 12", "waiting: disk held by sweep 3 until its last point ends"), or
        None when it is free. A set's hold is named first: it lasts until the set's last run, beyond the run on the
        disk now."""
        if place.disk in self.held:
            return RunSet.holding_text(*self.held[place.disk])
        if place.disk in self.on_disks:
            return f"waiting: disk busy with run {self.on_disks[place.disk]}"
        if place.exclusive and place.host in self.on_hosts:
            busy = self.on_hosts[place.host]
            return f"waiting: host {place.host_name} runs one benchmark at a time; busy with run {busy}"
        return None

    def take(self, place: Place, run: int) -> None:
        """`run` was judged free for `place` in this pass: the disk, and an exclusive host, are busy with it now."""
        self.on_disks[place.disk] = run
        if place.exclusive:
            self.on_hosts[place.host] = run


def _first_of(pairs: Iterable[tuple[int, int]]) -> dict[int, int]:
    """key -> the first run id given for it (the pairs come oldest run first)."""
    found: dict[int, int] = {}
    for key, run in pairs:
        found.setdefault(key, run)
    return found
