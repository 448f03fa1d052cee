"""Encryption at rest for credential and channel secrets (MultiFernet over the key ring).

The first key encrypts; every key decrypts, so a new key can be put in front, the tokens
re-encrypted with `manage.py rotate_field_keys`, and the old key dropped afterwards.

Where the ring comes from:
- BENCHWEB_FIELD_KEYS set in the environment: that list, fixed for the life of the process (an environment
  cannot change under a running process; rotate_field_keys --new-key refuses to touch it, and a new key takes
  effect when every process is restarted with it).
- otherwise var/field_keys (settings.FIELD_KEYS_FILE), read again by every process (web, worker, beat) as soon
  as the file changes, so `rotate_field_keys --new-key` works on a running stack: the file is looked at
  (one stat) before each use, and read again once more before a token is declared undecryptable.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured


class UndecryptableSecret(Exception):
    """A stored token that none of the configured keys opens."""


_lock = threading.Lock()
# The key file as last read: (path, (inode, size, mtime_ns, ctime_ns)) and its keys.
_read: tuple[tuple[Path, tuple[int, int, int, int]], list[str]] | None = None


def where() -> str:
    """Where the keys come from, in the words an operator acts on."""
    if settings.FIELD_KEYS_FROM_ENV:
        return "BENCHWEB_FIELD_KEYS (set in the environment)"
    return str(settings.FIELD_KEYS_FILE)


def keys(*, reread: bool = False) -> list[str]:
    """The key ring in force now: the environment's, or the key file's as it is now."""
    global _read
    if settings.FIELD_KEYS_FROM_ENV:
        return list(settings.FIELD_KEYS)
    path = Path(settings.FIELD_KEYS_FILE)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        # Removed under a running process: keep what it last read (settings hold what it started with).
        return _read[1] if _read and _read[0][0] == path else list(settings.FIELD_KEYS)
    stamp = (path, (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
    with _lock:
        if reread or _read is None or _read[0] != stamp:
            found = [key.strip() for key in path.read_text().split(",") if key.strip()]
            if not found:
                raise ImproperlyConfigured(f"{path} holds no key: restore it from a backup")
            _read = (stamp, found)
        return list(_read[1])


def _fernet(ring: list[str]) -> MultiFernet:
    try:
        return MultiFernet([Fernet(key.encode()) for key in ring])
    except (ValueError, TypeError) as exc:
        raise ImproperlyConfigured(
            f"{where()} must be a comma-separated list of Fernet keys "
            "(make one with: python manage.py rotate_field_keys --print-new-key)"
        ) from exc


def encrypt(plaintext: str) -> str:
    return _fernet(keys()).encrypt(plaintext.encode()).decode()


def decrypt(token: str) -> str:
    ring = keys()
    try:
        return _fernet(ring).decrypt(token.encode()).decode()
    except InvalidToken:
        pass
    # The file may have changed in a way its stamp does not show (a copy with the same size and time): read it
    # once more before giving up.
    fresh = keys(reread=True)
    try:
        if fresh != ring:
            return _fernet(fresh).decrypt(token.encode()).decode()
    except InvalidToken:
        pass
    raise UndecryptableSecret(
        f"none of the keys in {where()} decrypts it: restore the key it was written with, or enter the secret again"
    )


def rotate(token: str, ring: list[str]) -> str:
    """Re-encrypt a token under the first key of `ring` (decrypting with any of them)."""
    try:
        return _fernet(ring).rotate(token.encode()).decode()
    except InvalidToken as exc:
        raise UndecryptableSecret("a stored token matches none of the configured keys") from exc


def new_key() -> str:
    return Fernet.generate_key().decode()
