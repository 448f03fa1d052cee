"""Teams and who is in them: memberships with a role, invitations by user name."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from jobs.analysis import verdicts


class Team(models.Model):
    name = models.CharField(max_length=100, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    sweep_bound_s = models.PositiveIntegerField(
        default=4 * 3600,
        help_text="The longest a sweep of this team may take (points x (ramp + runtime)); longer ones are refused.",
    )
    verdict_thresholds = models.JSONField(
        default=dict,
        blank=True,
        help_text="The team's own limits of the verdict rules, by key (jobs.analysis.verdicts.THRESHOLDS); "
        "a key not here keeps its default.",
    )

    def __str__(self) -> str:
        return self.name

    def verdict_limits(self) -> dict[str, float]:
        """Every verdict threshold: the team's own over the defaults."""
        return verdicts.merged_thresholds(self.verdict_thresholds)


class Membership(models.Model):
    class Role(models.TextChoices):
        OWNER = "owner", "Owner"
        MEMBER = "member", "Member"
        VIEWER = "viewer", "Viewer"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.MEMBER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "team"], name="one_membership_per_user_and_team")]

    def __str__(self) -> str:
        return f"{self.user} in {self.team} ({self.role})"


class InvitationQuerySet(models.QuerySet):
    def pending(self) -> InvitationQuerySet:
        return self.filter(
            accepted_at__isnull=True, declined_at__isnull=True, revoked_at__isnull=True, expires_at__gt=timezone.now()
        )


class Invitation(models.Model):
    """An owner's offer of a role in a team; the membership exists only once the invited person accepts.

    `invited_as` is what the owner typed and all the owner ever sees: whether an account answers to it is not
    shown, so the form cannot be used to find out which usernames exist. `user` is the account it was bound to
    (at invitation, or at sign-up with the invited email), and only that account may accept or decline it.
    """

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="invitations")
    invited_as = models.CharField(max_length=254, help_text="The username or email the owner typed.")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, null=True, blank=True, related_name="invitations"
    )
    role = models.CharField(max_length=10, choices=Membership.Role.choices, default=Membership.Role.MEMBER)
    invited_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    token = models.CharField(max_length=64, unique=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    accepted_at = models.DateTimeField(null=True, blank=True)
    declined_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    objects = InvitationQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [models.Index(fields=["user", "expires_at"], name="invitation_user_expires")]

    def __str__(self) -> str:
        return f"{self.invited_as} to {self.team} ({self.role})"

    @property
    def is_pending(self) -> bool:
        answered = self.accepted_at or self.declined_at or self.revoked_at
        return not answered and self.expires_at > timezone.now()


class Preferences(models.Model):
    """A person's own settings, whatever team they look at. time_zone is an IANA name; empty means the browser's
    (the page reports it, see jobs.clock), and UTC when the browser said nothing."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="preferences")
    time_zone = models.CharField(
        max_length=64, blank=True, default="", help_text="IANA name, e.g. Europe/Berlin; empty: the browser's zone."
    )

    def __str__(self) -> str:
        return f"{self.user}: {self.time_zone or 'browser zone'}"
