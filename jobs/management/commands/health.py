from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection

from benchweb.celery import app


class Command(BaseCommand):
    help = "Check the database and that a Celery worker answers a task through the broker."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--timeout", type=float, default=20.0, help="Seconds to wait for a worker.")

    def handle(self, *args: Any, **options: Any) -> None:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        try:
            result = app.send_task("jobs.health").get(timeout=options["timeout"])
        except Exception as exc:
            raise CommandError(
                f"no Celery worker answered within {options['timeout']:g} s ({exc.__class__.__name__}: {exc}); "
                "is `./bw run` (or a worker) running against the same REDIS_URL?"
            ) from exc
        self.stdout.write(json.dumps({"database": connection.vendor, "worker": result}))
