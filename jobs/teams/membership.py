"""Which team a request acts for, the team a new user starts in, and invitations to join a team."""

from __future__ import annotations

import secrets
from datetime import datetime, timedelta
from typing import cast

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Q, QuerySet
from django.http import HttpRequest
from django.utils import timezone

from audit import log as audit
from audit.models import AuditEvent
from jobs import clock
from jobs.models import Invitation, Membership, Team

DEFAULT_TEAM_NAME = "Default team"
SESSION_KEY = "team_id"


def signed_in_user(request: HttpRequest) -> User:
    """The user of a request only a signed-in user reaches (login_required pages, IsAuthenticated API views).

    Django types request.user as the user or AnonymousUser whatever the view's decorators let through."""
    return cast(User, request.user)


def current_membership(request: HttpRequest) -> Membership | None:
    """The user's membership of the team chosen in the session, else of their first team."""
    memberships = Membership.objects.filter(user=signed_in_user(request)).select_related("team")
    chosen = request.session.get(SESSION_KEY)
    membership = memberships.filter(team_id=chosen).first() if chosen else None
    return membership or memberships.order_by("created_at").first()


def current_team(request: HttpRequest) -> Team | None:
    membership = current_membership(request)
    return membership.team if membership else None


@transaction.atomic
def place_new_user(user: User) -> Membership:
    """The first user owns the default team; later users start a team of their own until invited."""
    default, created = Team.objects.select_for_update().get_or_create(name=DEFAULT_TEAM_NAME)
    if created or not default.memberships.exists():
        return Membership.objects.create(user=user, team=default, role=Membership.Role.OWNER)
    own = Team.objects.create(name=f"{user.get_username()}'s team")
    return Membership.objects.create(user=user, team=own, role=Membership.Role.OWNER)


def role_in(user: User, team: Team) -> str | None:
    membership = Membership.objects.filter(user=user, team=team).first()
    return membership.role if membership else None


LAST_OWNER = "This is the team's last owner: make another member an owner first."


class MembershipRefused(ValueError):
    """A membership change that cannot be made; the message says why and what to do."""


INVITATION_DAYS = 14
INVITED = (
    "If an account with the username or email {value!r} exists, it has been invited to {team} as {role}; "
    "they join when they accept, within {days} days."
)


def invited_message(invitation: Invitation) -> str:
    """The same answer whether or not an account answers to what the owner typed: no username probing."""
    return INVITED.format(
        value=invitation.invited_as, team=invitation.team.name, role=invitation.role, days=INVITATION_DAYS
    )


def _only_account(value: str) -> User | None:
    """The one account with this username or email address; None when there is none or several."""
    users = get_user_model().objects.filter(Q(username=value) | Q(email__iexact=value) & ~Q(email=""))
    found = list(users[:2])
    return found[0] if len(found) == 1 else None


@transaction.atomic
def invite(team: Team, invited_by: User, value: str, role: str) -> Invitation:
    """Invite whoever has this username or email to `team`; nobody joins until they accept.

    Inviting the same username or email again replaces the pending invitation (new role, new expiry)."""
    value = value.strip()
    user = _only_account(value)
    if user is not None and Membership.objects.filter(team=team, user=user).exists():
        # Members and their emails are listed on the page already: saying so gives nothing away.
        raise MembershipRefused(f"{user.get_username()} is already in this team; change their role below.")
    expires = timezone.now() + timedelta(days=INVITATION_DAYS)
    fields = {"user": user, "role": role, "invited_by": invited_by, "expires_at": expires}
    invitation = team.invitations.pending().filter(invited_as__iexact=value).first()
    if invitation is None:
        invitation = Invitation.objects.create(team=team, invited_as=value, token=secrets.token_urlsafe(32), **fields)
    else:
        Invitation.objects.filter(pk=invitation.pk).update(**fields)
        invitation.refresh_from_db()
    # What the owner typed, never whether it matched an account: owners read this log.
    audit.record(team, invited_by, AuditEvent.Action.INVITATION_CREATED, invitation, invited=value, role=role)
    return invitation


def pending_invitations(user: User) -> QuerySet[Invitation]:
    return Invitation.objects.pending().filter(user=user).select_related("team", "invited_by")


def claim_invitations(user: User) -> int:
    """At sign-up: pending invitations sent to the new account's email address are now theirs to answer.

    Only email invitations are claimed: a username typed before anyone had it may be a typo, and whoever
    registers it later was not the person meant."""
    email = getattr(user, "email", "")
    if not email:
        return 0
    unbound = Invitation.objects.pending().filter(user__isnull=True, invited_as__iexact=email)
    return unbound.update(user=user)


def tell_about_invitations(request: HttpRequest) -> None:
    """On sign-in and sign-up: say that invitations wait, and where to answer them."""
    names = [invitation.team.name for invitation in pending_invitations(signed_in_user(request))]
    if names:
        messages.info(
            request,
            f"You are invited to join {', '.join(names)}: open Invitations at the top of the page (in the Menu "
            "on a phone) to accept or decline.",
        )


def _answerable(invitation: Invitation) -> None:
    if invitation.revoked_at:
        raise MembershipRefused("This invitation was withdrawn by the team's owners; ask them to invite you again.")
    if invitation.accepted_at or invitation.declined_at:
        raise MembershipRefused("You have answered this invitation already.")
    if invitation.expires_at <= timezone.now():
        raise MembershipRefused(
            f"This invitation to {invitation.team.name} expired on {_shown(invitation.expires_at)}; "
            "ask one of its owners to invite you again."
        )


@transaction.atomic
def accept(invitation: Invitation, user: User) -> Membership:
    """Join the team with the invited role. Only the invited account, only while the invitation is pending."""
    invitation = Invitation.objects.select_for_update().select_related("team").get(pk=invitation.pk, user=user)
    _answerable(invitation)
    membership, _ = Membership.objects.get_or_create(user=user, team=invitation.team,
                                                     defaults={"role": invitation.role})  # fmt: skip
    Invitation.objects.filter(pk=invitation.pk).update(accepted_at=timezone.now())
    audit.record(invitation.team, user, AuditEvent.Action.INVITATION_ACCEPTED, membership,
                 invited=invitation.invited_as, member=user.get_username(), role=membership.role)  # fmt: skip
    return membership


@transaction.atomic
def decline(invitation: Invitation, user: User) -> None:
    invitation = Invitation.objects.select_for_update().select_related("team").get(pk=invitation.pk, user=user)
    _answerable(invitation)
    Invitation.objects.filter(pk=invitation.pk).update(declined_at=timezone.now())
    audit.record(invitation.team, user, AuditEvent.Action.INVITATION_DECLINED, invitation,
                 invited=invitation.invited_as, role=invitation.role)  # fmt: skip


def revoke(invitation: Invitation, by: User) -> None:
    if Invitation.objects.filter(pk=invitation.pk, revoked_at=None).update(revoked_at=timezone.now()):
        audit.record(invitation.team, by, AuditEvent.Action.INVITATION_REVOKED, invitation,
                     invited=invitation.invited_as, role=invitation.role)  # fmt: skip


def last_owner_guard(membership: Membership) -> None:
    """Refuse to demote or remove a team's last owner."""
    owners = Membership.objects.filter(team_id=membership.team_id, role=Membership.Role.OWNER)
    if membership.role == Membership.Role.OWNER and not owners.exclude(pk=membership.pk).exists():
        raise MembershipRefused(LAST_OWNER)


def _shown(moment: datetime) -> str:
    """A time in a message: the reader's zone on the pages, UTC in the API (jobs.middleware)."""
    return clock.show(moment, timezone.get_current_timezone(), clock.MINUTES)
