"""Share links: a read-only, expiring, revocable address of one disk page, one comparison, one sweep or one group, for
people without an account. Only a SHA-256 digest of the link's secret is stored, as for API tokens
(jobs/api/models.py): the full address is shown once, when the link is made, and a copy of the database opens
nothing. A lost address is revoked and made again, which costs nothing; keeping it encrypted to show it again would
keep a way to read it."""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import F
from django.utils import timezone

from jobs.models.disks import Disk
from jobs.models.sets import RunSet
from jobs.models.teams import Team

DEFAULT_DAYS, MAX_DAYS = 7, 90
# 32 random bytes, URL-safe base64 without padding: 256 bits that no one guesses, whatever the rate.
TOKEN_PATTERN = re.compile(r"[A-Za-z0-9_-]{43}")


def digest(token: str) -> str:
    # A 256-bit random secret cannot be found from its hash, so a plain SHA-256 is enough: no slow KDF.
    return hashlib.sha256(token.encode()).hexdigest()


class ShareLink(models.Model):
    class Kind(models.TextChoices):
        DISK = "disk", "Disk page"
        COMPARE = "compare", "Comparison"
        SWEEP = "sweep", "Sweep"
        GROUP = "group", "Group"

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="share_links", editable=False)
    kind = models.CharField(max_length=8, choices=Kind.choices)
    disk = models.ForeignKey(Disk, on_delete=models.CASCADE, null=True, blank=True, related_name="share_links")
    # The Compare page's query, validated when the link was made (jobs/shares/sharing.py compare_query):
    # {"disks": [ids]} or {"runs": [ids]}, and the Statistics card's choices.
    compare = models.JSONField(null=True, blank=True)
    # With kind sweep or group: the sweep or synchronised group whose page the link shows (its members' numbers, never
    # their run pages).
    run_set = models.ForeignKey(RunSet, on_delete=models.CASCADE, null=True, blank=True, related_name="share_links")
    token_digest = models.CharField(max_length=64, unique=True, editable=False)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    revoked_at = models.DateTimeField(null=True, blank=True, editable=False)
    last_viewed_at = models.DateTimeField(null=True, blank=True, editable=False)
    view_count = models.PositiveIntegerField(default=0, editable=False)
    # The one zone the link's pages and JSON answers write times in (a share page has no signed-in reader): the
    # creator's zone when it was made (their Preferences, else the page's they made it from), else UTC.
    time_zone = models.CharField(max_length=64, default="UTC", editable=False)

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(kind="disk", disk__isnull=False, compare__isnull=True, run_set__isnull=True)
                | models.Q(kind="compare", disk__isnull=True, compare__isnull=False, run_set__isnull=True)
                | models.Q(kind__in=["sweep", "group"], disk__isnull=True, compare__isnull=True, run_set__isnull=False),
                name="share_link_has_its_target",
            )
        ]

    def __str__(self) -> str:
        return f"share link {self.pk} ({self.kind})"

    @classmethod
    def issue(cls, *, team: Team, user: Any, days: int, disk: Disk | None = None,
              compare: dict[str, Any] | None = None, run_set: RunSet | None = None,
              time_zone: str = "UTC") -> tuple[ShareLink, str]:  # fmt: skip
        """A new link and the only copy of its token, to be shown once."""
        token = secrets.token_urlsafe(32)
        link = cls.objects.create(
            team=team,
            kind=cls.Kind.DISK if disk else cls.set_kind(run_set) if run_set else cls.Kind.COMPARE,
            disk=disk,
            compare=compare,
            run_set=run_set,
            token_digest=digest(token),
            created_by=user,
            expires_at=timezone.now() + timedelta(days=days),
            time_zone=time_zone,
        )
        return link, token

    @classmethod
    def set_kind(cls, run_set: RunSet) -> str:
        return cls.Kind.GROUP if run_set.kind == RunSet.Kind.GROUP else cls.Kind.SWEEP

    @classmethod
    def find(cls, token: str) -> ShareLink | None:
        """The link this token opens, whatever its state; None for anything else."""
        if not TOKEN_PATTERN.fullmatch(token):
            return None
        wanted = digest(token)
        link = cls.objects.select_related("disk__host", "run_set__disk__host").filter(token_digest=wanted).first()
        # The lookup is by an index on the digest; the comparison is constant-time all the same.
        return link if link and hmac.compare_digest(link.token_digest, wanted) else None

    @property
    def state(self) -> str:
        if self.revoked_at is not None:
            return "revoked"
        return "expired" if self.expires_at <= timezone.now() else "active"

    def revoke(self) -> bool:
        """Revoke the link; False when it already was."""
        changed = ShareLink.objects.filter(pk=self.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())
        self.refresh_from_db(fields=["revoked_at"])
        return bool(changed)

    def note_view(self) -> None:
        now = timezone.now()
        ShareLink.objects.filter(pk=self.pk).update(view_count=F("view_count") + 1, last_viewed_at=now)
