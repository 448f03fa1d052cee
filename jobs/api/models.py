"""Personal API tokens (a token acts for one user in one team; only a hash of its secret is stored), and the
idempotency keys clients send with the requests that start runs and sets."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone

from jobs.models import Team

TOKEN_PREFIX = "bw"  # noqa: S105  (a fixed label that makes tokens recognisable, not a secret)


def _digest(secret: str) -> str:
    # A 32-byte random secret cannot be guessed from its hash, so a plain SHA-256 is enough: no slow KDF.
    return hashlib.sha256(secret.encode()).hexdigest()


class ApiToken(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100, help_text="What the token is for, e.g. 'nightly CI'.")
    prefix = models.CharField(max_length=16, unique=True, editable=False, help_text="Shown to tell tokens apart.")
    hashed_secret = models.CharField(max_length=64, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @classmethod
    def issue(cls, user: Any, team: Team, name: str, expires_at: datetime | None = None) -> tuple[ApiToken, str]:
        """A new token and the only copy of its full value, to be shown once."""
        prefix = secrets.token_hex(4)
        secret = secrets.token_urlsafe(32)
        token = cls.objects.create(
            user=user, team=team, name=name, prefix=prefix, hashed_secret=_digest(secret), expires_at=expires_at
        )
        return token, f"{TOKEN_PREFIX}_{prefix}_{secret}"

    @staticmethod
    def split(value: str) -> tuple[str, str] | None:
        """'bw_<prefix>_<secret>' -> (prefix, secret), or None for anything else."""
        parts = value.split("_", 2)
        if len(parts) != 3 or parts[0] != TOKEN_PREFIX or not parts[1] or not parts[2]:
            return None
        return parts[1], parts[2]

    def matches(self, secret: str) -> bool:
        return hmac.compare_digest(self.hashed_secret, _digest(secret))

    @property
    def is_expired(self) -> bool:
        return self.expires_at is not None and self.expires_at <= timezone.now()

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None and not self.is_expired

    def revoke(self) -> None:
        ApiToken.objects.filter(pk=self.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())
        self.refresh_from_db(fields=["revoked_at"])


class IdempotencyKey(models.Model):
    """A key a client sent with a request that starts something (`Idempotency-Key`), with what that request started:
    a retry with the same key is answered with it instead of starting it again (jobs/api/idempotency.py)."""

    KEPT = timedelta(hours=24)  # a key may start something anew after this; the daily prune deletes it
    KEPT_TEXT = "24 hours"

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    endpoint = models.CharField(max_length=100, help_text="The path the key was sent to: '/api/v1/runs/'.")
    key = models.CharField(max_length=255)
    fingerprint = models.CharField(max_length=64, help_text="SHA-256 of the request's parsed body.")
    kind = models.CharField(max_length=20, help_text="What the request started: 'run' or 'runset'.")
    # Stored in the transaction that claims the key, which commits both or neither: null only until then.
    object_id = models.BigIntegerField(null=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["team", "endpoint", "key"], name="api_idempotency_key_once_per_endpoint")
        ]

    def __str__(self) -> str:
        return f"{self.endpoint} {self.key}"

    @classmethod
    def forget_expired(cls) -> int:
        """Deletes the keys past KEPT (the daily prune, jobs/tasks.py); how many."""
        return cls.objects.filter(created_at__lte=timezone.now() - cls.KEPT).delete()[0]
