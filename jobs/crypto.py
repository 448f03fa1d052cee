"""Encryption at rest for credential secrets (MultiFernet over BENCHWEB_FIELD_KEYS).

The first key encrypts; every key decrypts, so a new key can be put in front, the tokens
re-encrypted with `manage.py rotate_field_keys`, and the old key dropped afterwards.
"""

from __future__ import annotations

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured


class UndecryptableSecret(Exception):
    """A stored token that none of the configured keys opens."""


def _fernet(keys: list[str] | None = None) -> MultiFernet:
    keys = keys if keys is not None else settings.FIELD_KEYS
    try:
        return MultiFernet([Fernet(key.encode()) for key in keys])
    except (ValueError, TypeError) as exc:
        raise ImproperlyConfigured(
            "BENCHWEB_FIELD_KEYS must be a comma-separated list of Fernet keys "
            "(make one with: python manage.py rotate_field_keys --print-new-key)"
        ) from exc


def encrypt(plaintext: str) -> str:
    return _fernet().encrypt(plaintext.encode()).decode()


def decrypt(token: str) -> str:
    try:
        return _fernet().decrypt(token.encode()).decode()
    except InvalidToken as exc:
        raise UndecryptableSecret(
            "a stored credential cannot be decrypted with the configured BENCHWEB_FIELD_KEYS; "
            "restore the key it was written with, or enter the secret again"
        ) from exc


def rotate(token: str, keys: list[str] | None = None) -> str:
    """Re-encrypt a token under the first key (decrypting with any of them)."""
    try:
        return _fernet(keys).rotate(token.encode()).decode()
    except InvalidToken as exc:
        raise UndecryptableSecret("a stored token matches none of the configured keys") from exc


def new_key() -> str:
    return Fernet.generate_key().decode()
