"""A team's runs by state for /metrics (benchweb_runs), without counting its whole history each scrape.

Runs only move forward and nothing leaves a final state (jobs/runs/states.py), so the runs up to an id below
which every run was final keep their counts: RunTally holds them, and a scrape counts only the runs after it (the
ones still going, and those made since). Each scrape moves the watermark up to the last run seen before the first
that is not final or was made within SETTLED: a run not committed yet (a long import's) has an id after it, or
was made before that run, so a transaction longer than SETTLED is the one case it would miss.

Runs below the watermark go away with their disk (a host's or the team's deletion deletes its disks) or in the
admin: `deduct` takes them off the tally in the deletion's transaction. Any other way (a shell, SQL) shows in the
team's disks and sets no longer being those counted, and the next scrape counts all the team's runs again, once
(seconds at ten million runs; so does the first scrape after the upgrade that brought the tally)."""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Count, Max, Min, Q, QuerySet, Sum
from django.db.models.signals import pre_delete
from django.dispatch import receiver

from jobs.models import Disk, Run, RunSet, RunTally

SETTLED = timedelta(hours=1)


def runs_by_state(team_ids: list[int], now: datetime) -> dict[tuple[int, str], int]:
    """(team id, state): runs of the team kept in that state, every state of Run.State counted exactly."""
    return {(team_id, state): n for team_id in team_ids for state, n in _team(team_id, now).items()}


def deduct(runs: QuerySet[Run], disk: Disk | None = None) -> None:
    """Take `runs`, about to be deleted, off their teams' tallies (and `disk` with its sets, deleted with them);
    in the deleting transaction."""
    for kept in RunTally.objects.select_for_update().filter(team_id__in=runs.values("team_id").distinct()):
        gone = runs.filter(team_id=kept.team_id, pk__lte=kept.upto).values_list("state").annotate(n=Count("pk"))
        kept.counts = dict(+(Counter(kept.counts) - Counter(dict(gone.order_by()))))
        if disk is not None and disk.team_id == kept.team_id:
            sets = RunSet.objects.filter(disk=disk).aggregate(n=Count("pk"), ids=Sum("pk"))
            kept.disks, kept.disk_ids = kept.disks - 1, kept.disk_ids - disk.pk
            kept.sets, kept.set_ids = kept.sets - sets["n"], kept.set_ids - (sets["ids"] or 0)
        kept.save()


@receiver(pre_delete, sender=Disk, dispatch_uid="runs_of_a_deleted_disk_off_the_tally")
def _disk_deleted(sender: type[Disk], instance: Disk, **kwargs: Any) -> None:
    deduct(Run.objects.filter(disk=instance), disk=instance)


def _kept_as(team_id: int) -> dict[str, int]:
    """The team's disks and sets now, as RunTally keeps what it counted."""
    disks = Disk.objects.filter(team_id=team_id).aggregate(n=Count("pk"), ids=Sum("pk"))
    sets = RunSet.objects.filter(team_id=team_id).aggregate(n=Count("pk"), ids=Sum("pk"))
    return {"disks": disks["n"], "disk_ids": disks["ids"] or 0, "sets": sets["n"], "set_ids": sets["ids"] or 0}


def _team(team_id: int, now: datetime) -> Counter[str]:
    seen = _kept_as(team_id)
    kept = RunTally.objects.filter(team_id=team_id, **seen).first()
    upto, settled = (kept.upto, Counter(kept.counts)) if kept else (0, Counter[str]())
    after = Run.objects.filter(team_id=team_id, pk__gt=upto)
    # The first run after the watermark that may still change or appear: not final, or made too recently.
    going = after.exclude(state__in=Run.FINAL_STATES).aggregate(first=Min("pk"))["first"]
    recent = after.filter(created_at__gt=now - SETTLED).aggregate(first=Min("pk"))["first"]
    first_open = min((pk for pk in (going, recent) if pk is not None), default=None)
    closed = Q(pk__lt=first_open) if first_open is not None else Q()
    rows = after.values("state").annotate(n=Count("pk"), closed=Count("pk", filter=closed),
                                          last=Max("pk", filter=closed))  # fmt: skip
    counts = Counter(settled)
    moved = Counter(settled)
    # Up to the last run seen closed, not to just below first_open: an id between them not seen yet may be a
    # run still being committed.
    new_upto = upto
    for row in rows.order_by():
        counts[row["state"]] += row["n"]
        moved[row["state"]] += row["closed"]
        new_upto = max(new_upto, row["last"] or upto)
    if kept is None:
        _keep_afresh(team_id, new_upto, moved, seen, now)
    elif new_upto > upto:
        # Only over the watermark read: another scrape that moved it first wins, with the same counts.
        RunTally.objects.filter(team_id=team_id, upto=upto, **seen).update(
            upto=new_upto, counts=dict(+moved), counted_at=now
        )
    return counts


def _keep_afresh(team_id: int, upto: int, counts: Counter[str], seen: dict[str, int], now: datetime) -> None:
    # One upsert: two scrapes making it at the same moment count the same runs.
    RunTally.objects.bulk_create(
        [RunTally(team_id=team_id, upto=upto, counts=dict(+counts), counted_at=now, **seen)],
        update_conflicts=True,
        unique_fields=["team"],
        update_fields=["upto", "counts", "counted_at", *seen],
    )
