from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from jobs import units
from jobs.runs import retention


class Command(BaseCommand):
    help = (
        "Drop the raw output and per-second samples of runs that finished more than DAYS ago, keeping their "
        "summaries (the charts keep working). Safe to interrupt and run again."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--older-than", type=int, required=True, metavar="DAYS")
        parser.add_argument("--dry-run", action="store_true", help="count what would go, change nothing")

    def handle(self, *args: Any, **options: Any) -> None:
        days, dry = options["older_than"], options["dry_run"]

        def progress(done: retention.Pruned) -> None:
            self.stderr.write(f"  {done.runs} runs, {done.samples} samples ...")

        try:
            done = retention.prune(days, dry_run=dry, progress=progress)
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        verb = "would drop" if dry else "dropped"
        self.stdout.write(
            f"{verb} the raw output ({units.format_bytes(done.raw_bytes)}) and {done.samples} per-second samples "
            f"of {done.runs} runs that finished more than {days} days ago; their summaries are kept; and "
            f"{done.telemetry} seconds of host telemetry from before then"
        )
