from __future__ import annotations

import getpass
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from django.db import transaction
from django.utils import timezone

from jobs import sshd_local, teams
from jobs.models import Credential, Disk, Host, Team

HOST_NAME = "local-demo"


class Command(BaseCommand):
    help = "Register (or update) the local demo sshd started by ./bw run as a host with a directory disk."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--port", type=int, required=True)
        parser.add_argument("--workdir", type=Path, required=True)

    @transaction.atomic
    def handle(self, *args: Any, **options: Any) -> None:
        workdir: Path = options["workdir"]
        team, _ = Team.objects.get_or_create(name=teams.DEFAULT_TEAM_NAME)
        key = sshd_local.public_key_of(workdir / "ssh_host_ed25519_key.pub")
        credential, _ = Credential.objects.get_or_create(
            team=team, name="local demo key", defaults={"kind": Credential.Kind.PRIVATE_KEY}
        )
        credential.kind = Credential.Kind.PRIVATE_KEY
        credential.set_secret((workdir / "id_ed25519").read_text())
        credential.save()
        host, _ = Host.objects.update_or_create(
            team=team,
            name=HOST_NAME,
            defaults={
                "address": "127.0.0.1",
                "port": options["port"],
                "username": getpass.getuser(),
                "credential": credential,
                "run_base_dir": str(workdir / "runs"),
                "host_key_type": key.key_type,
                "host_key_b64": key.key_b64,
                "host_key_fingerprint": key.fingerprint,
                "host_key_approved_at": timezone.now(),
            },
        )
        Disk.objects.get_or_create(
            host=host,
            label="demo-dir",
            defaults={"target_path": str(workdir / "target"), "kind": Disk.Kind.DIRECTORY, "disk_type": "custom"},
        )
        self.stdout.write(f"demo target: {host.username}@127.0.0.1:{options['port']} ({key.fingerprint})")
