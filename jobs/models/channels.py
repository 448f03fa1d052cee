"""Where a team's alerts go (AlertChannel: e-mail, a signed webhook, or any service Apprise speaks) and what
became of each one sent there (Delivery, the channel's delivery log).

A channel's secrets are stored encrypted (jobs/crypto.py) and never shown back: the webhook signing secret once,
at creation; a webhook or Apprise URL (it may carry a user:password@, an Apprise URL the service's tokens) only
masked. `target` is what the pages and the API show: the addresses, or the URL masked. Deliveries are attempted
by the workers (jobs/notify/delivery.py), never on a request or a run; a channel whose last attempts all failed is
"dead".
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models

from jobs import crypto
from jobs.models.teams import Team

EVENTS = ("opened", "reopened", "acknowledged", "resolved")
KINDS = ("regression", "below_promise", "run_failed", "schedule_skipped", "stale", "host_key_changed")


class AlertChannel(models.Model):
    class Kind(models.TextChoices):
        EMAIL = "email", "E-mail"
        WEBHOOK = "webhook", "Webhook"
        APPRISE = "apprise", "Apprise (Slack, Teams, Discord, Matrix, PagerDuty …)"

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="alert_channels", editable=False)
    name = models.CharField(max_length=100)
    kind = models.CharField(max_length=8, choices=Kind.choices)
    target = models.CharField(max_length=2000, help_text="The e-mail addresses, or the webhook or Apprise URL masked.")
    url_token = models.TextField(blank=True, editable=False)
    secret_token = models.TextField(blank=True, editable=False)
    events = models.JSONField(default=list, blank=True, help_text="Alert events it wants; empty: every event.")
    kinds = models.JSONField(default=list, blank=True, help_text="Alert kinds it wants; empty: every kind.")
    enabled = models.BooleanField(default=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+", editable=False
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # Kept by each delivery attempt (a conditional UPDATE), so the list shows a dead channel without a query per row.
    failures_in_a_row = models.PositiveIntegerField(default=0, editable=False)
    last_error = models.TextField(blank=True, editable=False)
    last_sent_at = models.DateTimeField(null=True, blank=True, editable=False)
    last_failed_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["team", "name"], name="alert_channel_name_unique_in_team")]

    def __str__(self) -> str:
        return f"{self.name} ({self.get_kind_display()})"

    @property
    def is_dead(self) -> bool:
        return self.failures_in_a_row >= settings.CHANNEL_DEAD_AFTER

    @property
    def addresses(self) -> list[str]:
        if self.kind != self.Kind.EMAIL:
            return []
        return [address.strip() for address in self.target.split(",") if address.strip()]

    def wants(self, event: str, kind: str) -> bool:
        return (not self.events or event in self.events) and (not self.kinds or kind in self.kinds)

    def set_secret(self, secret: str) -> None:
        self.secret_token = crypto.encrypt(secret)

    def reveal_secret(self) -> str:
        return crypto.decrypt(self.secret_token)

    def set_url(self, url: str, masked: str) -> None:
        """A webhook's or Apprise URL: stored encrypted, shown masked."""
        self.url_token = crypto.encrypt(url)
        self.target = masked

    def reveal_url(self) -> str:
        return crypto.decrypt(self.url_token)


class Delivery(models.Model):
    """One event sent to one channel, with every attempt counted: the channel's delivery log."""

    class State(models.TextChoices):
        QUEUED = "queued", "Queued"
        SENT = "sent", "Sent"
        FAILED = "failed", "Failed, will retry"
        GAVE_UP = "gave_up", "Gave up"

    channel = models.ForeignKey(AlertChannel, on_delete=models.CASCADE, related_name="deliveries")
    event = models.JSONField(help_text="The event as published: {'event': ..., 'alert': {...}}.")
    summary = models.CharField(max_length=300, help_text="The subject line, e.g. OPEN regression: …")
    state = models.CharField(max_length=8, choices=State.choices, default=State.QUEUED)
    attempts = models.PositiveIntegerField(default=0)
    response = models.CharField(max_length=300, blank=True, help_text="The HTTP status or the SMTP reply.")
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    # An attempt under way holds the delivery until then, so a re-sent message does not deliver it twice.
    leased_until = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [
            models.Index(fields=["channel", "-created_at"], name="delivery_channel_created"),
            models.Index(fields=["state", "next_attempt_at"], name="delivery_state_due"),
        ]
        verbose_name_plural = "deliveries"

    def __str__(self) -> str:
        return f"{self.summary} to {self.channel.name} ({self.state})"

    @property
    def pending(self) -> bool:
        return self.state in (self.State.QUEUED, self.State.FAILED)

    def payload(self) -> dict[str, Any]:
        """What a webhook receives: the event, plus which delivery this is (sent_at is added when sent)."""
        return {**self.event, "delivery": self.pk}
