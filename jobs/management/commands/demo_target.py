from __future__ import annotations

import getpass
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction
from django.utils import timezone

from jobs import ssh
from jobs.models import Credential, Disk, Host, Team
from jobs.teams import membership as teams

HOST_NAME = "local-demo"


class Command(BaseCommand):
    help = (
        "Register (or update) a demo target as a host with a directory disk: the local sshd that ./bw run starts "
        "(--port and --workdir), or the compose stack's `target` service (--address target --keys-dir ...)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--port", type=int, required=True)
        parser.add_argument("--workdir", type=Path, help="./bw run's demo directory: keys, runs/ and target/")
        parser.add_argument("--address", default="127.0.0.1")
        parser.add_argument("--username", default=None, help="default: the user running this command")
        parser.add_argument("--name", default=HOST_NAME, help=f"host name in benchweb (default {HOST_NAME})")
        parser.add_argument("--keys-dir", type=Path, help="holds id_ed25519 and ssh_host_ed25519_key.pub")
        parser.add_argument("--run-base-dir", help="run directories on the target (default WORKDIR/runs)")
        parser.add_argument("--target-path", help="the demo disk's directory on the target (default WORKDIR/target)")

    @transaction.atomic
    def handle(self, *args: Any, **options: Any) -> None:
        workdir: Path | None = options["workdir"]
        keys = options["keys_dir"] or workdir
        run_base = options["run_base_dir"] or (workdir and str(workdir / "runs"))
        target = options["target_path"] or (workdir and str(workdir / "target"))
        if not (keys and run_base and target):
            raise CommandError("give --workdir, or all of --keys-dir, --run-base-dir and --target-path")
        try:
            key = ssh.host_key_from_line((keys / "ssh_host_ed25519_key.pub").read_text())
            private_key = (keys / "id_ed25519").read_text()
        except (OSError, ValueError) as exc:
            raise CommandError(f"cannot read the demo target's keys in {keys}: {exc}") from exc
        team, _ = Team.objects.get_or_create(name=teams.DEFAULT_TEAM_NAME)
        credential_name = "local demo key" if options["name"] == HOST_NAME else f"{options['name']} key"
        credential, _ = Credential.objects.get_or_create(
            team=team, name=credential_name, defaults={"kind": Credential.Kind.PRIVATE_KEY}
        )
        credential.kind = Credential.Kind.PRIVATE_KEY
        credential.set_secret(private_key)
        credential.save()
        host, _ = Host.objects.update_or_create(
            team=team,
            name=options["name"],
            defaults={
                "address": options["address"],
                "port": options["port"],
                "username": options["username"] or getpass.getuser(),
                "credential": credential,
                "run_base_dir": run_base,
                # The key comes from the target's own key file, not from the network: pinned and approved.
                "host_key_type": key.key_type,
                "host_key_b64": key.key_b64,
                "host_key_fingerprint": key.fingerprint,
                "host_key_approved_at": timezone.now(),
            },
        )
        Disk.objects.update_or_create(
            host=host,
            label="demo-dir",
            defaults={"target_path": target, "kind": Disk.Kind.DIRECTORY, "disk_type": "custom"},
        )
        self.stdout.write(f"demo target: {host.username}@{host.address}:{host.port} ({key.fingerprint})")
