"""Re-encrypt every stored secret (credentials, alert channels' webhook secrets and Apprise URLs) under the first
key of the ring; with --new-key, first put a new key in front in var/field_keys and drop the old ones after.

A running stack needs no restart: every process reads var/field_keys again when it changes (jobs/crypto.py).
Keys set in the environment cannot be changed from here; the command says what to do instead."""

from __future__ import annotations

import os
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import models, transaction

from jobs import crypto
from jobs.models import AlertChannel, Credential

# Every encrypted field, by model: a token left out here would be unreadable once its key is dropped.
ENCRYPTED: list[tuple[type[models.Model], tuple[str, ...]]] = [
    (Credential, ("secret_token", "passphrase_token")),
    (AlertChannel, ("secret_token", "url_token")),
]


def _write_keys(keys: list[str]) -> None:
    path = settings.FIELD_KEYS_FILE
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(",".join(keys) + "\n")
    os.replace(tmp, path)  # atomic: a process reading the file sees the old ring or the new one, never half


class Command(BaseCommand):
    help = (
        "Re-encrypt every stored secret under the first key of the key ring. With --new-key (keys kept in "
        "var/field_keys), first generate a new key and put it in front; running processes pick it up themselves."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--new-key", action="store_true", help="Generate a new key and rotate to it.")
        parser.add_argument("--keep-old", action="store_true", help="With --new-key: keep the old keys afterwards.")
        parser.add_argument("--print-new-key", action="store_true", help="Print a new key and change nothing.")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["print_new_key"]:
            self.stdout.write(crypto.new_key())
            return
        keys = crypto.keys()
        if options["new_key"]:
            if settings.FIELD_KEYS_FROM_ENV:
                raise CommandError(
                    "BENCHWEB_FIELD_KEYS is set in the environment, so this command cannot change it, and running "
                    "processes keep the list they started with. Put a new key (from --print-new-key) first in that "
                    "list on every machine, restart the web server, the workers and beat (./bw run: Ctrl-C and "
                    "start it again), then run rotate_field_keys.",
                    returncode=2,
                )
            keys = [crypto.new_key(), *keys]
            # Both keys are on disk before any token changes: a crash part-way leaves every token readable, and
            # every running process encrypts with the new key from its next use on.
            _write_keys(keys)
        count, unreadable = self._reencrypt(keys)
        if options["new_key"] and not options["keep_old"]:
            _write_keys(keys[:1])
            # A secret saved by a process that had not yet seen the new file is under an old key: this
            # command still holds the old keys, so it moves those too.
            self._reencrypt(keys)
        self.stdout.write(f"Re-encrypted {count} secret(s) under the first of {len(keys)} key(s).")
        if settings.FIELD_KEYS_FROM_ENV:
            self.stdout.write(
                "Once this ran, the old keys may be removed from BENCHWEB_FIELD_KEYS on every machine; restart the "
                "web server, the workers and beat after changing it."
            )
        else:
            self.stdout.write(
                f"Running web servers, workers and beat read {settings.FIELD_KEYS_FILE} again by themselves: "
                "nothing to restart."
            )
        for what in unreadable:
            self.stderr.write(
                f"{what} could not be decrypted with any key (before this rotation either) and was left as it was: "
                "enter its secret again, or restore the key it was written with and run rotate_field_keys again."
            )

    @transaction.atomic
    def _reencrypt(self, keys: list[str]) -> tuple[int, list[str]]:
        count, unreadable = 0, []
        for model, fields in ENCRYPTED:
            for row in model._default_manager.select_for_update().order_by("pk"):
                changed = []
                for field in fields:
                    token = getattr(row, field)
                    if not token:
                        continue
                    try:
                        setattr(row, field, crypto.rotate(token, keys))
                    except crypto.UndecryptableSecret:
                        unreadable.append(f"{model._meta.verbose_name} {row.pk} ({row}) {field}")
                        continue
                    changed.append(field)
                if changed:
                    row.save(update_fields=changed)
                    count += 1
        return count, unreadable
