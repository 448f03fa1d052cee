"""What `./bw run` does before it starts the web server, worker and beat, in one Python start (each start of
Django costs a second or more on a small machine): migrate, then register the demo target when there is one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser


class Command(BaseCommand):
    help = "Migrate, then (with --demo-port and --demo-workdir) register ./bw run's demo target."
    requires_system_checks: list[str] = []  # migrate runs the checks it depends on

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--demo-port", type=int, help="the demo sshd's port on 127.0.0.1")
        parser.add_argument("--demo-workdir", type=Path, help="the demo directory: keys, runs/ and target/")

    def handle(self, *args: Any, **options: Any) -> None:
        call_command("migrate", interactive=False, verbosity=0, skip_checks=False)
        if options["demo_port"] is not None:
            call_command("demo_target", port=options["demo_port"], workdir=options["demo_workdir"])
