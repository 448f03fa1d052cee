from __future__ import annotations

import os
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from jobs import crypto
from jobs.models import AlertChannel, Credential


def _write_keys(keys: list[str]) -> None:
    path = settings.FIELD_KEYS_FILE
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(",".join(keys) + "\n")
    os.replace(tmp, path)


class Command(BaseCommand):
    help = (
        "Re-encrypt every stored credential under the first key of BENCHWEB_FIELD_KEYS. "
        "With --new-key (keys kept in var/field_keys), first generate a new key and put it in front."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--new-key", action="store_true", help="Generate a new key and rotate to it.")
        parser.add_argument("--keep-old", action="store_true", help="With --new-key: keep the old keys afterwards.")
        parser.add_argument("--print-new-key", action="store_true", help="Print a new key and change nothing.")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["print_new_key"]:
            self.stdout.write(crypto.new_key())
            return
        keys = list(settings.FIELD_KEYS)
        if options["new_key"]:
            if settings.FIELD_KEYS_FROM_ENV:
                raise CommandError(
                    "BENCHWEB_FIELD_KEYS is set in the environment, so this command cannot change it. "
                    "Put a new key (from --print-new-key) first in that list, restart, then run rotate_field_keys.",
                    returncode=2,
                )
            keys = [crypto.new_key(), *keys]
            # Both keys are on disk before any token changes: a crash part-way leaves every token readable.
            _write_keys(keys)
        count = self._reencrypt(keys)
        if options["new_key"] and not options["keep_old"]:
            _write_keys(keys[:1])
        self.stdout.write(
            f"Re-encrypted {count} credential(s) and alert channel(s) with the first of {len(keys)} keys."
        )

    @transaction.atomic
    def _reencrypt(self, keys: list[str]) -> int:
        count = 0
        for credential in Credential.objects.select_for_update():
            credential.secret_token = crypto.rotate(credential.secret_token, keys)
            if credential.passphrase_token:
                credential.passphrase_token = crypto.rotate(credential.passphrase_token, keys)
            credential.save(update_fields=["secret_token", "passphrase_token"])
            count += 1
        # An alert channel's webhook signing secret and its webhook or Apprise URL are encrypted with the same keys.
        for channel in AlertChannel.objects.select_for_update():
            channel.secret_token = crypto.rotate(channel.secret_token, keys) if channel.secret_token else ""
            channel.url_token = crypto.rotate(channel.url_token, keys) if channel.url_token else ""
            channel.save(update_fields=["secret_token", "url_token"])
            count += 1
        return count
