from __future__ import annotations

from django.conf import settings
from django.db import models


class AuditEvent(models.Model):
    """One security-relevant change. `details` holds names, fingerprints and ids, never a secret."""

    class Action(models.TextChoices):
        HOST_KEY_APPROVED = "host_key.approved", "Host key approved"
        HOST_KEY_CHANGED = "host_key.changed", "Host key changed (scan found a different key)"
        CREDENTIAL_CREATED = "credential.created", "Credential created"
        CREDENTIAL_CHANGED = "credential.changed", "Credential changed"
        CREDENTIAL_DELETED = "credential.deleted", "Credential deleted"
        HOST_CREDENTIAL_CHANGED = "host.credential_changed", "Host switched to another credential"
        DESTRUCTIVE_RUN = "run.destructive", "Destructive run created"
        TOKEN_CREATED = "token.created", "API token created"
        TOKEN_REVOKED = "token.revoked", "API token revoked"
        MEMBER_ADDED = "member.added", "Member added"
        MEMBER_ROLE_CHANGED = "member.role_changed", "Member's role changed"
        MEMBER_REMOVED = "member.removed", "Member removed"
        INVITATION_CREATED = "invitation.created", "Invitation sent"
        INVITATION_ACCEPTED = "invitation.accepted", "Invitation accepted"
        INVITATION_DECLINED = "invitation.declined", "Invitation declined"
        INVITATION_REVOKED = "invitation.revoked", "Invitation revoked"
        HOST_KEY_REFUSED = "host_key.refused", "Connection refused (host key changed)"
        DISK_IDENTITY_RECORDED = "disk.identity_recorded", "Disk identity recorded"
        DISK_IDENTITY_REFUSED = "disk.identity_refused", "Write refused (a different disk at the path)"
        SHARE_CREATED = "share.created", "Share link created"
        SHARE_REVOKED = "share.revoked", "Share link revoked"

    team = models.ForeignKey("jobs.Team", on_delete=models.CASCADE, related_name="audit_events", null=True)
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    actor_name = models.CharField(max_length=150, blank=True, help_text="Kept when the user is deleted.")
    action = models.CharField(max_length=40, choices=Action.choices)
    object_type = models.CharField(max_length=40, blank=True)
    object_id = models.CharField(max_length=40, blank=True)
    object_repr = models.CharField(max_length=200, blank=True)
    details = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [models.Index(fields=["team", "-created_at"], name="audit_team_created")]

    def __str__(self) -> str:
        return f"{self.created_at:%Y-%m-%d %H:%M} {self.actor_name or 'system'}: {self.get_action_display()}"
