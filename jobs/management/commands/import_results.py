from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from jobs import errors
from jobs.imports import importing
from jobs.models import Disk
from jobs.tools.summary import ParseError

MAX_BYTES = 64 * 2**20
log = logging.getLogger(__name__)


class Command(BaseCommand):
    help = (
        "Import fio (JSON, text, terse) or ndisk64 output files as finished runs of a disk, or, with --dry-run, "
        "print what they parse to. An output with several results (fio groups, each client and 'All clients') "
        "becomes one run per result (--result picks some by label). A file that cannot be read, recognised or "
        "stored (or is already stored on the disk) is reported with its reason and skipped; the other files are "
        "still processed, and the exit status is 2 if any failed."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("paths", nargs="+", metavar="PATH")
        target = parser.add_mutually_exclusive_group(required=True)
        target.add_argument("--disk", type=int, help="Id of the disk the runs belong to.")
        target.add_argument("--dry-run", action="store_true", help="Parse and print; store nothing.")
        parser.add_argument("--at", help="When the runs finished, ISO 8601 (default: now), e.g. 2026-05-01T02:30:00Z.")
        parser.add_argument("--tool", choices=["auto", "fio", "ndisk64"], default="auto")
        parser.add_argument("--json", action="store_true", help="Print JSON.")
        parser.add_argument(
            "--result",
            action="append",
            metavar="LABEL",
            help="Store only the result with this label (repeat for several), e.g. 'All clients' or 'group 1'.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        disk = self._disk(options["disk"]) if options["disk"] is not None else None
        at = self._at(options["at"])
        results: list[Any] = []
        for path in options["paths"]:
            try:
                results.append(self._one(path, disk, at, options))
            except (OSError, UnicodeDecodeError, ParseError, errors.FieldRefused, importing.DuplicateImport) as exc:
                results.append(None)
                self.stderr.write(f"{path}: not imported: {exc}")
            except Exception as exc:
                # Whatever went wrong with one file, the others are still imported (docs/user-guide/imports.md promises
                # it).
                log.exception("import_results: %s failed", path)
                results.append(None)
                self.stderr.write(
                    f"{path}: not imported: unexpected {type(exc).__name__}: {exc} (a bug: please "
                    "report it with this file); nothing was stored for it"
                )
        failures = results.count(None)
        if options["json"]:
            self.stdout.write(json.dumps(results, indent=2))
        done = "parsed" if disk is None else "imported"
        tally = f"{len(results) - failures} of {len(results)} file(s) {done}, {failures} failed"
        (self.stderr if options["json"] else self.stdout).write(tally)
        if failures:
            sys.exit(2)

    def _one(self, path: str, disk: Disk | None, at: Any, options: dict[str, Any]) -> Any:
        """A file with one result: its summary (or stored run); with several, a list of them, each with its label."""
        text = self._read(Path(path))
        if disk is None:
            results = importing.pick(importing.parse_results(text, options["tool"]), options["result"])
            for result in results if not options["json"] else []:
                label = f" ({result.label})" if result.label else ""
                partial = f", partial: {result.partial}" if result.partial else ""
                total = result.summary["total"]["iops"]
                self.stdout.write(f"{path}{label}: {result.summary['tool']}, {total:.1f} IOPS{partial}")
            if len(results) == 1:
                return results[0].summary
            return [{"label": r.label, "partial": r.partial, "summary": r.summary} for r in results]
        runs = importing.import_results(
            disk, text, name=Path(path).name, at=at, tool=options["tool"], labels=options["result"]
        )
        for run in runs if not options["json"] else []:
            label = f" ({run.parameters['label']})" if run.parameters.get("label") else ""
            self.stdout.write(f"{path}{label}: stored as run {run.pk} ({run.state}) on {disk}")
        stored = [
            {"path": path, "label": run.parameters.get("label", ""), "run": run.pk, "state": run.state,
             "summary": run.summary}
            for run in runs
        ]  # fmt: skip
        return stored[0] if len(stored) == 1 else stored

    def _disk(self, pk: int) -> Disk:
        try:
            return Disk.objects.select_related("host").get(pk=pk)
        except Disk.DoesNotExist:
            raise CommandError(f"--disk {pk}: no such disk; the disk ids are on the disk pages", returncode=2) from None

    def _at(self, value: str | None) -> Any:
        if value is None:
            return None
        moment = parse_datetime(value)
        if moment is None:
            raise CommandError(f"--at {value!r} is not an ISO 8601 date-time; e.g. 2026-05-01T02:30:00Z", returncode=2)
        return moment if timezone.is_aware(moment) else timezone.make_aware(moment, timezone.get_default_timezone())

    def _read(self, path: Path) -> str:
        if path.stat().st_size > MAX_BYTES:
            raise OSError(f"larger than {MAX_BYTES // 2**20} MiB; is this really tool output?")
        return path.read_bytes().decode("utf-8")
