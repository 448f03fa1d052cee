"""Start a group-size sweep: one profile as a synchronised group of the first 1, 2, 4, … of the disks given, size after
size (docs/user-guide/groups.md, "Group-size sweeps")."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db.models import Q

from jobs.models import Disk, Profile, Run
from jobs.runs.queueing import RunRefused
from jobs.sets import requesting


class Command(BaseCommand):
    help = (
        "Start a group-size sweep of a profile on disks of one team, in the order given: the group of the first k "
        "disks for each size k (by default 1, 2, 4, … up to the number of disks, ending at it), each size's members "
        "started together once the size before it has ended. It is refused whole, nothing started, when a size or "
        "a disk cannot run; prints the sweep's id, its page and what it does now."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--profile", type=int, required=True, help="Id of the profile (the team's or a built-in).")
        parser.add_argument(
            "--disk", type=int, action="append", required=True, help="Id of a disk; repeat, in member order."
        )
        parser.add_argument("--sizes", help="The group sizes, e.g. 1,2,3 (default: 1, 2, 4, … ending at the disks).")

    def handle(self, *args: Any, **options: Any) -> None:
        disks = _disks(options["disk"])
        team = disks[0].team_id
        profile = Profile.objects.filter(Q(team_id=team) | Q(team__isnull=True), pk=options["profile"]).first()
        if profile is None:
            raise CommandError(f"--profile {options['profile']}: no such profile of the disks' team or built in.")
        try:
            run_set = requesting.request_group_sizes(
                disks, profile, _sizes(options["sizes"]), trigger=Run.Trigger.MANUAL
            )
        except RunRefused as exc:
            raise CommandError(f"Not started ({exc.field}): {exc}") from exc
        self.stdout.write(f"{run_set.label} (/sets/{run_set.pk}/): {run_set.explanation}")


def _disks(ids: list[int]) -> list[Disk]:
    found = Disk.objects.select_related("host", "team").in_bulk(ids)
    if missing := [str(pk) for pk in ids if pk not in found]:
        raise CommandError(f"--disk {', '.join(missing)}: no such disk.")
    return [found[pk] for pk in ids]


def _sizes(text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:
        return [int(part) for part in text.replace(" ", "").split(",") if part]
    except ValueError:
        raise CommandError(
            f"--sizes {text!r}: give whole numbers of members separated by commas, e.g. 1,2,4."
        ) from None
