"""Secrets generated on first start and kept in 0600 files, so a fresh checkout needs no set-up."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from cryptography.fernet import Fernet

GENERATORS = {
    "django": lambda: secrets.token_urlsafe(50),
    "fernet": lambda: Fernet.generate_key().decode(),
}


def read_or_create(path: Path, kind: str) -> str:
    """Return the secret stored at `path`, creating it (mode 0600) when it does not exist yet."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path.read_text().strip()
    # O_EXCL makes exactly one of several processes starting at once the writer; the others
    # read what it wrote, so the web server, worker and beat always share one key.
    with os.fdopen(fd, "w") as handle:
        handle.write(GENERATORS[kind]() + "\n")
    return path.read_text().strip()
